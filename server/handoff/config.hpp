// platoon-server's configuration, from its flags.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "runtime/options.hpp"

namespace platoon::server {

struct Config {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  std::string backend_host = "127.0.0.1";
  uint16_t backend_port = 8081;
  bool passthrough = false;
  std::chrono::milliseconds backend_timeout{1000};
  std::chrono::milliseconds connect_timeout{1000};
  std::chrono::milliseconds idle_timeout{60000};    // keep-alive connection with no request
  std::chrono::milliseconds request_timeout{10000}; // a started request must arrive in full
  size_t max_header_bytes = 8192;
  size_t max_backend_connections = 1024;            // per pool (carrier), idle or busy
  size_t max_connections = 0;                       // client connections; 0: derived from the limits
  rt::Options runtime;
};

}  // namespace platoon::server
