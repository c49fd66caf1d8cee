#include "base/log.h"

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace hvd {

std::atomic<int> g_log_level{static_cast<int>(LogLevel::Warning)};

namespace {
std::atomic<int> g_log_rank{-1};

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::Trace: return "TRACE";
    case LogLevel::Debug: return "DEBUG";
    case LogLevel::Info: return "INFO";
    case LogLevel::Warning: return "WARNING";
    case LogLevel::Error: return "ERROR";
    case LogLevel::Fatal: return "FATAL";
    case LogLevel::Off: break;
  }
  return "";
}
}  // namespace

void set_log_level(LogLevel level) { g_log_level.store(static_cast<int>(level)); }
void set_log_rank(int rank) { g_log_rank.store(rank); }

void log_write(LogLevel level, const char* file, int line, const char* fmt, ...) {
  char message[2048];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(message, sizeof message, fmt, args);
  va_end(args);
  const char* base = std::strrchr(file, '/');
  base = base ? base + 1 : file;
  char rank[32] = "";
  if (g_log_rank.load() >= 0) std::snprintf(rank, sizeof rank, " rank %d", g_log_rank.load());
  // Debug locations help developers; users at warning level get the sentence only.
  if (level <= LogLevel::Debug)
    std::fprintf(stderr, "[hvd%s] %s %s:%d: %s\n", rank, level_name(level), base, line, message);
  else
    std::fprintf(stderr, "[hvd%s] %s: %s\n", rank, level_name(level), message);
}

}  // namespace hvd
