#pragma once
namespace platoon {
inline constexpr const char* kVersion = "0.6.0";
}
