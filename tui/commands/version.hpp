// The version `platoon --version` prints and every recording's header carries.
#pragma once
namespace platoon::cli {
inline constexpr const char* kVersion = "0.6.0";
}
