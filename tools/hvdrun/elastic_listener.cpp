#include "elastic_listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "host_check.h"

namespace hvdrun {
namespace {

double monotonic_seconds() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

// A line is at most this long; a peer sending more without a newline is not a worker.
constexpr size_t kMaxLine = 256;

void send_line(int fd, const std::string& line) {
  // Small lines on a fresh socket: the kernel's buffer takes them whole. A peer that
  // does not read is not waited for.
  ssize_t ignored = ::send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  (void)ignored;
}

}  // namespace

Result<std::unique_ptr<ElasticListener>> ElasticListener::start(const std::string& token) {
  using R = Result<std::unique_ptr<ElasticListener>>;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return R::failure(std::string("cannot open a socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 16) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    return R::failure("cannot listen on a TCP port: " + why);
  }
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    ::close(fd);
    return R::failure(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  std::unique_ptr<ElasticListener> l(new ElasticListener(fd, ntohs(addr.sin_port), token, wake[0], wake[1]));
  l->thread_ = std::thread([raw = l.get()] { raw->serve(); });
  return R(std::move(l));
}

ElasticListener::ElasticListener(int fd, int port, std::string token, int wake_read, int wake_write)
    : listen_fd_(fd), port_(port), token_(std::move(token)), wake_read_(wake_read), wake_write_(wake_write) {}

ElasticListener::~ElasticListener() {
  stop_ = true;
  wake();
  if (thread_.joinable()) thread_.join();
  ::close(listen_fd_);
  ::close(wake_read_);
  ::close(wake_write_);
}

void ElasticListener::wake() {
  ssize_t ignored = ::write(wake_write_, "x", 1);
  (void)ignored;
}

void ElasticListener::new_generation(int64_t generation) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    generation_ = generation;
    ++generation_epoch_;
    update_seq_ = 0;
    update_line_.clear();
  }
  wake();
}

void ElasticListener::hosts_updated(int result) {
  timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  char line[96];
  std::snprintf(line, sizeof line, "HOSTS_UPDATED %lld.%02ld %d\n", static_cast<long long>(now.tv_sec),
                now.tv_nsec / 10000000, result);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    update_line_ = line;
    ++update_seq_;
  }
  wake();
}

void ElasticListener::serve() {
  std::vector<Connection> conns;
  uint64_t epoch_seen = 0;
  char buf[512];
  while (!stop_) {
    std::vector<pollfd> fds = {{wake_read_, POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    for (const Connection& c : conns) fds.push_back({c.fd, POLLIN, 0});
    ::poll(fds.data(), static_cast<nfds_t>(fds.size()), 250);
    while (::read(wake_read_, buf, sizeof buf) > 0) {
    }
    std::string expected_hello, update;
    uint64_t seq, epoch;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      expected_hello = "HELLO " + token_ + " " + std::to_string(generation_);
      update = update_line_;
      seq = update_seq_;
      epoch = generation_epoch_;
    }
    // The last generation's connections are done with.
    if (epoch != epoch_seen) {
      for (Connection& c : conns) ::close(c.fd);
      conns.clear();
      epoch_seen = epoch;
      continue;
    }
    if (fds[1].revents & POLLIN) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd >= 0) conns.push_back({fd, monotonic_seconds(), "", false, 0});
    }
    for (size_t i = 0; i < conns.size() && i + 2 < fds.size(); ++i) {
      if (!fds[i + 2].revents) continue;
      Connection& c = conns[i];
      const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        ::close(c.fd);
        c.fd = -1;
        continue;
      }
      if (n < 0 || c.greeted) continue;  // a worker's later lines mean nothing here
      c.received.append(buf, static_cast<size_t>(n));
      const size_t nl = c.received.find('\n');
      if (nl == std::string::npos) {
        if (c.received.size() > kMaxLine) {
          ::close(c.fd);
          c.fd = -1;
        }
        continue;
      }
      std::string line = c.received.substr(0, nl);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line != expected_hello) {
        ::close(c.fd);
        c.fd = -1;
        continue;
      }
      c.greeted = true;
    }
    const double now = monotonic_seconds();
    for (Connection& c : conns) {
      if (c.fd < 0) continue;
      if (!c.greeted && now - c.opened_at > kHelloSeconds) {
        ::close(c.fd);
        c.fd = -1;
        continue;
      }
      if (c.greeted && seq != 0 && c.sent_update != seq) {
        send_line(c.fd, update);
        c.sent_update = seq;
      }
    }
    std::erase_if(conns, [](const Connection& c) { return c.fd < 0; });
  }
  for (Connection& c : conns) ::close(c.fd);
}

}  // namespace hvdrun

namespace hvdrun {

Result<std::string> advertised_address(const HostList& hosts, const std::vector<std::string>& interfaces,
                                       const std::optional<std::string>& override_address) {
  using R = Result<std::string>;
  if (override_address && !override_address->empty()) return *override_address;
  const HostSlots* remote = nullptr;
  for (const HostSlots& h : hosts)
    if (!is_this_machine(h.host)) {
      remote = &h;
      break;
    }
  if (!remote) return std::string("127.0.0.1");
  const std::string remedy =
      "; set HVDRUN_ELASTIC_ADDRESS to this machine's address on the network the hosts "
      "share, e.g. HVDRUN_ELASTIC_ADDRESS=10.0.0.1";
  if (!interfaces.empty()) {
    ifaddrs* list = nullptr;
    std::string found;
    if (::getifaddrs(&list) == 0) {
      for (const std::string& wanted : interfaces) {
        for (ifaddrs* a = list; a && found.empty(); a = a->ifa_next)
          if (a->ifa_name && wanted == a->ifa_name && a->ifa_addr && a->ifa_addr->sa_family == AF_INET) {
            char text[INET_ADDRSTRLEN];
            ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof text);
            found = text;
          }
        if (!found.empty()) break;
      }
      ::freeifaddrs(list);
    }
    if (!found.empty()) return found;
  }
  // The source address of a route to the host: a UDP socket's connect sends nothing.
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(remote->host.c_str(), "9", &hints, &res) != 0 || !res)
    return R::failure("cannot tell which address host " + remote->host +
                      " reaches this machine at (its name does not resolve here)" + remedy);
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in local{};
  socklen_t len = sizeof local;
  const bool ok = fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(res);
  if (!ok)
    return R::failure("cannot tell which address host " + remote->host +
                      " reaches this machine at (no route to it)" + remedy);
  char text[INET_ADDRSTRLEN];
  ::inet_ntop(AF_INET, &local.sin_addr, text, sizeof text);
  return std::string(text);
}

}  // namespace hvdrun
