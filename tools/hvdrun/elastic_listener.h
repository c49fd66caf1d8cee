// hvdrun's notification listener of an elastic job (the HVD_ELASTIC_DRIVER address):
// rank 0 of each generation connects and proves itself with `HELLO <token>
// <generation>\n`; hvdrun then sends it `HOSTS_UPDATED <timestamp> <result>\n` when the
// hosts change in a way that should change the job. A thread of its own serves it, so
// that the generation's launcher is waited for meanwhile.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "hosts.h"
#include "result.h"

namespace hvdrun {

// How long a connection may take to send its HELLO line before it is closed.
inline constexpr double kHelloSeconds = 5;

class ElasticListener {
 public:
  // Listens on every address, on a port the kernel picks.
  static Result<std::unique_ptr<ElasticListener>> start(const std::string& token);
  ~ElasticListener();
  ElasticListener(const ElasticListener&) = delete;
  ElasticListener& operator=(const ElasticListener&) = delete;

  int port() const { return port_; }
  // A new generation runs: the last one's connections are closed and its update
  // forgotten; only a HELLO naming `generation` is taken from now on.
  void new_generation(int64_t generation);
  // Sends HOSTS_UPDATED with Horovod's result bits to the generation's connections,
  // and to any that says HELLO later in this generation.
  void hosts_updated(int result);

 private:
  ElasticListener(int fd, int port, std::string token, int wake_read, int wake_write);
  void serve();
  void wake();

  struct Connection {
    int fd = -1;
    double opened_at = 0;
    std::string received;
    bool greeted = false;
    uint64_t sent_update = 0;  // the last update sent on it
  };
  int listen_fd_, port_;
  const std::string token_;
  int wake_read_, wake_write_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;  // guards what follows
  int64_t generation_ = 0;
  uint64_t generation_epoch_ = 0;  // grows with each new_generation
  uint64_t update_seq_ = 0;        // grows with each update; 0: none in this generation
  std::string update_line_;
  std::thread thread_;
};

}  // namespace hvdrun

namespace hvdrun {

// The address workers on `hosts` reach this machine at, for HVD_ELASTIC_DRIVER:
// HVDRUN_ELASTIC_ADDRESS when set (given as `override`); 127.0.0.1 when every host is
// this machine; else the IPv4 address of the first of `interfaces` (--network-interface)
// this machine has; else the one its routing table uses towards the first other host.
// An error says to set HVDRUN_ELASTIC_ADDRESS.
Result<std::string> advertised_address(const HostList& hosts, const std::vector<std::string>& interfaces,
                                       const std::optional<std::string>& override_address);

}  // namespace hvdrun
