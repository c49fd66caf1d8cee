// Leveled logging to stderr, checked before formatting (HOROVOD_LOG_LEVEL).
#pragma once

#include <atomic>

namespace hvd {

enum class LogLevel : int { Trace = 0, Debug, Info, Warning, Error, Fatal, Off };

extern std::atomic<int> g_log_level;

void set_log_level(LogLevel level);
void set_log_rank(int rank);
void log_write(LogLevel level, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

}  // namespace hvd

#define HVD_LOG(level, ...)                                                        \
  do {                                                                             \
    if (static_cast<int>(::hvd::LogLevel::level) >=                                \
        ::hvd::g_log_level.load(std::memory_order_relaxed))                        \
      ::hvd::log_write(::hvd::LogLevel::level, __FILE__, __LINE__, __VA_ARGS__);   \
  } while (0)
