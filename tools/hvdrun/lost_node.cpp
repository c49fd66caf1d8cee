#include "lost_node.h"

#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace hvdrun {

std::vector<std::vector<int>> planned_ranks_by_host(const HostList& hosts, int64_t num_proc,
                                                    MpiFlavor flavor, bool own_mapping) {
  const int64_t slots = total_slots(hosts);
  if (hosts.empty() || own_mapping || slots <= 0) return {};
  if (flavor == MpiFlavor::OpenMpi && num_proc > slots) return {};
  std::vector<std::vector<int>> ranks(hosts.size());
  // Rank r takes slot r mod slots of the hosts' slots laid end to end.
  for (int64_t r = 0; r < num_proc; ++r) {
    int64_t slot = r % slots;
    size_t h = 0;
    while (slot >= hosts[h].slots) slot -= hosts[h++].slots;
    ranks[h].push_back(static_cast<int>(r));
  }
  return ranks;
}

void LauncherLossLines::feed(std::string_view text) {
  partial_.append(text);
  size_t start = 0, nl;
  while ((nl = partial_.find('\n', start)) != std::string::npos) {
    line(std::string_view(partial_).substr(start, nl - start));
    start = nl + 1;
  }
  partial_.erase(0, start);
  // A line without its end for long is no launcher message: keep memory bounded.
  if (partial_.size() > 4096) partial_.clear();
}

void LauncherLossLines::line(std::string_view text) {
  // Hydra's mpiexec, when a proxy's control connection closes.
  if (text.find("control_cb") != std::string_view::npos &&
      text.find("assert (!closed) failed") != std::string_view::npos)
    lost_ = true;
  // Open MPI's mpirun when a daemon's starter ends (help-plm-base.txt,
  // daemon-died-no-signal): at start, and for a node lost later.
  if (text.find("ORTE was unable to reliably start one or more daemons") != std::string_view::npos)
    lost_ = true;
  // Open MPI's mpirun (help-errmgr-base.txt, node-died).
  if (text.find("ORTE has lost communication with a remote daemon") != std::string_view::npos) {
    lost_ = true;
    in_orte_message_ = true;
    return;
  }
  constexpr std::string_view kRemote = "Remote daemon:";
  if (in_orte_message_ && text.find(kRemote) != std::string_view::npos) {
    constexpr std::string_view kOnNode = " on node ";
    const size_t at = text.rfind(kOnNode);
    if (at != std::string_view::npos) {
      std::string name(text.substr(at + kOnNode.size()));
      while (!name.empty() && (name.back() == ' ' || name.back() == '\r')) name.pop_back();
      if (!name.empty()) node_ = name;
    }
    const size_t id = text.find("[[");
    if (id != std::string_view::npos) {
      long family = -1;
      if (std::sscanf(std::string(text.substr(id)).c_str(), "[[%ld,", &family) == 1 && family >= 0)
        job_family_ = family;
    }
    in_orte_message_ = false;
  }
}

namespace {

// The number after the word `key` in a command line; -1 if none.
long number_after(std::string_view cmdline, std::string_view key) {
  std::string all(cmdline);
  for (char& c : all)
    if (c == '\0' || c == '"' || c == '\'') c = ' ';
  std::istringstream in(all);
  std::string word;
  while (in >> word) {
    if (word != key) continue;
    std::string id;
    if (!(in >> id) || id.empty() || id.size() > 12 ||
        id.find_first_not_of("0123456789") != std::string::npos)
      return -1;
    return std::stol(id);
  }
  return -1;
}

}  // namespace

int hydra_proxy_id(std::string_view cmdline) {
  const long id = number_after(cmdline, "--proxy-id");
  if (id >= 0) return static_cast<int>(id);
  // Open MPI's daemon: vpid 0 is mpirun itself; daemon k serves the k-th host.
  const long vpid = number_after(cmdline, "ess_base_vpid");
  return vpid >= 1 ? static_cast<int>(vpid - 1) : -1;
}

long openmpi_job_family(std::string_view cmdline) {
  const long jobid = number_after(cmdline, "ess_base_jobid");
  return jobid >= 0 ? jobid >> 16 : -1;
}

LauncherChildren::~LauncherChildren() {
  for (auto& [pid, child] : children_)
    if (child.pidfd >= 0) ::close(child.pidfd);
}

void LauncherChildren::scan() {
  const std::string task = "/proc/" + std::to_string(launcher_) + "/task/" + std::to_string(launcher_);
  std::ifstream list(task + "/children");
  long pid;
  while (list >> pid) {
    // A child read between its fork and its exec shows the launcher's own command
    // line: read again until it shows a proxy's.
    auto known = children_.find(static_cast<pid_t>(pid));
    if (known != children_.end() && (known->second.proxy_id >= 0 || ++known->second.reads > 20))
      continue;
    std::ifstream cmd("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
    std::stringstream text;
    text << cmd.rdbuf();
    const int id = hydra_proxy_id(text.str());
    Child& child = children_[static_cast<pid_t>(pid)];
    child.proxy_id = id;
    if (id >= 0 && openmpi_job_family(text.str()) >= 0) job_family_ = openmpi_job_family(text.str());
    // Only the proxies' starters are watched: a pidfd of every child is not needed.
    if (id >= 0) child.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
  }
}

std::vector<int> LauncherChildren::fds() const {
  std::vector<int> out;
  for (const auto& [pid, child] : children_)
    if (child.pidfd >= 0 && !child.ended) out.push_back(child.pidfd);
  return out;
}

void LauncherChildren::signal_running(int sig) {
  check();
  for (auto& [pid, child] : children_) {
    if (child.pidfd < 0 || child.ended) continue;
    const pid_t group = ::getpgid(pid);
    if (group > 0 && group == pid && group != ::getpgrp()) ::kill(-group, sig);
    ::syscall(SYS_pidfd_send_signal, child.pidfd, sig, nullptr, 0);
  }
}

void LauncherChildren::check() {
  std::vector<Child*> ended_now;
  for (auto& [pid, child] : children_) {
    if (child.pidfd < 0 || child.ended) continue;
    pollfd p{child.pidfd, POLLIN, 0};
    if (::poll(&p, 1, 0) == 1) {
      child.ended = true;
      ended_now.push_back(&child);
    }
  }
  if (ended_now.empty() || first_seen_) return;
  first_seen_ = true;
  // Only the first to end: the launcher closes its connections as it exits, before
  // waitid sees it ended, and the proxies of surviving nodes end then. Whether the
  // launcher still runs is asked after the children (WNOWAIT: its status stays for the
  // caller's waitpid): a child seen ended before it ended; if it had ended, which child
  // ended first is not known.
  siginfo_t info{};
  const bool launcher_running =
      ::waitid(P_PID, static_cast<id_t>(launcher_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
      info.si_pid == 0;
  if (!launcher_running) return;
  for (Child* child : ended_now) ended_first_.insert(child->proxy_id);
}

std::vector<LostNode> find_lost_nodes(const LauncherLossLines& lines, const std::set<int>& proxies_ended_first,
                                      const HostList& hosts,
                                      const std::vector<std::vector<int>>& ranks_by_host,
                                      const std::set<int>& ranks_reported) {
  if (!lines.lost_connection()) return {};
  // The hosts with ranks, in order: Hydra's proxy k serves the k-th.
  std::vector<size_t> served;
  for (size_t h = 0; h < hosts.size(); ++h)
    if (ranks_by_host.empty() || !ranks_by_host[h].empty()) served.push_back(h);
  std::vector<size_t> lost_hosts;
  std::vector<LostNode> lost;
  if (lines.named_node()) {
    size_t h = 0;
    while (h < hosts.size() && hosts[h].host != *lines.named_node()) ++h;
    if (h == hosts.size()) return {LostNode{*lines.named_node(), {}}};
    lost_hosts.push_back(h);
  } else if (!proxies_ended_first.empty() && proxies_ended_first.size() < served.size()) {
    for (int id : proxies_ended_first) {
      if (id < 0 || static_cast<size_t>(id) >= served.size()) return {};
      lost_hosts.push_back(served[static_cast<size_t>(id)]);
    }
  } else {
    // No proxy, or every one, was seen to end first (the launcher ended the others
    // before hvdrun looked): the one host none of whose ranks said a word, while ranks
    // of other hosts did, is the lost one. Anything less clear names nobody.
    if (ranks_by_host.empty()) return {};
    std::vector<size_t> silent;
    bool others_spoke = false;
    for (size_t h : served) {
      bool spoke = false;
      for (int r : ranks_by_host[h]) spoke = spoke || ranks_reported.count(r) > 0;
      if (spoke)
        others_spoke = true;
      else
        silent.push_back(h);
    }
    if (silent.size() != 1 || !others_spoke) return {};
    lost_hosts.push_back(silent[0]);
  }
  for (size_t h : lost_hosts) {
    LostNode node{hosts[h].host, {}};
    if (!ranks_by_host.empty()) node.ranks = ranks_by_host[h];
    // A rank of it that reported its exit did not vanish with its node.
    for (int r : node.ranks)
      if (ranks_reported.count(r)) return {};
    lost.push_back(std::move(node));
  }
  return lost;
}

void remove_lost_session_dir(const std::string& host, long job_family) {
  // The name comes from the launcher's text: a path of its own would be no host.
  if (!host_name_problem(host).empty() || job_family < 0) return;
  const char* tmp = std::getenv("TMPDIR");
  const std::string top = std::string(tmp && *tmp ? tmp : "/tmp") + "/ompi." + host + "." +
                          std::to_string(static_cast<unsigned long>(::getuid()));
  const std::string mine = top + "/jf." + std::to_string(job_family);
  struct stat st;
  if (::lstat(mine.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid()) return;
  std::error_code ec;
  std::filesystem::remove_all(mine, ec);
  ::rmdir(top.c_str());  // only when nothing else is left in it
}

std::string describe_lost_nodes(const std::vector<LostNode>& lost) {
  std::string out;
  for (const LostNode& node : lost) {
    if (!out.empty()) out += "; ";
    out += "host " + node.host + " was lost";
    if (node.ranks.empty()) continue;
    out += node.ranks.size() == 1 ? " (rank " : " (ranks ";
    for (size_t i = 0; i < node.ranks.size(); ++i) out += (i ? "," : "") + std::to_string(node.ranks[i]);
    out += ")";
  }
  return out;
}

}  // namespace hvdrun
