// The experiment's payload (the seed's MockHttpServer): ten fruits of name/color/price.
// The backend serves them pretty-printed (~600 bytes); the handoff server answers compact JSON
// (~480 bytes) after parsing them into structs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace platoon::fruits {

struct Fruit {
  std::string name;
  std::string color;
  double price = 0;
};

const std::vector<Fruit>& catalogue();
// The backend's body, built once: pretty-printed, one fruit per line.
const std::string& backend_body();
// The compact form the handoff server writes, e.g. {"fruits":[{"name":"Apple",...},...]}.
std::string compact_json(const std::vector<Fruit>& fruits);
// Parses a body of the backend's shape. False (and `error`) when it is not one. Both this and
// compact_json throw std::bad_alloc when memory runs out (never write through a null).
bool parse(std::string_view body, std::vector<Fruit>& out, std::string& error);

}  // namespace platoon::fruits
