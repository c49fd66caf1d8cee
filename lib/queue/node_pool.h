// Spare nodes of an unordered container, kept for reuse. The runtime's maps and sets
// of tensor names see the same names every training step; taking a node back from
// here (and assigning into its key string, which keeps its capacity) avoids an
// allocation for the node and one for the key per tensor.
#pragma once

#include <cstddef>
#include <vector>

namespace hvd {

template <typename Container>
class NodePool {
 public:
  using Node = typename Container::node_type;

  // A spare node, or a fresh one (made in a container of the same type that holds
  // nothing else: node handles move between containers of one type).
  Node take() {
    if (!spare_.empty()) {
      Node node = std::move(spare_.back());
      spare_.pop_back();
      return node;
    }
    Container maker;
    return maker.extract(maker.emplace().first);
  }

  // Keeps node for reuse; a bounded reserve, enough for a large model's tensors.
  void give(Node&& node) {
    if (node && spare_.size() < kMaxSpare) spare_.push_back(std::move(node));
  }

 private:
  static constexpr size_t kMaxSpare = 65536;
  std::vector<Node> spare_;
};

}  // namespace hvd
