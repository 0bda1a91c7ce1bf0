#include "server/common/fruits.hpp"

#include <cstdio>
#include <cstdlib>
#include <new>
#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace platoon::fruits {

namespace {
// RapidJSON's CrtAllocator hands malloc's null back unchecked and the parser writes through it:
// when fiber stacks have taken the address space, a request's JSON work would be a SIGSEGV of the
// whole server. This one throws std::bad_alloc, which costs that request's connection only.
class ThrowingAllocator {
 public:
  static const bool kNeedFree = true;
  void* Malloc(size_t size) {
    if (size == 0) return nullptr;  // as CrtAllocator: malloc(0) is implementation-defined
    return checked(std::malloc(size));
  }
  void* Realloc(void* original, size_t, size_t new_size) {
    if (new_size == 0) {
      std::free(original);
      return nullptr;
    }
    return checked(std::realloc(original, new_size));  // on failure `original` is still owned by the caller
  }
  static void Free(void* p) { std::free(p); }

 private:
  static void* checked(void* p) {
    if (!p) throw std::bad_alloc();
    return p;
  }
};

using Document = rapidjson::GenericDocument<rapidjson::UTF8<>, rapidjson::MemoryPoolAllocator<ThrowingAllocator>,
                                            ThrowingAllocator>;
using Buffer = rapidjson::GenericStringBuffer<rapidjson::UTF8<>, ThrowingAllocator>;
using Writer = rapidjson::Writer<Buffer, rapidjson::UTF8<>, rapidjson::UTF8<>, ThrowingAllocator>;
}  // namespace

const std::vector<Fruit>& catalogue() {
  static const std::vector<Fruit> all = {
      {"Apple", "Red", 1.20},   {"Banana", "Yellow", 0.50}, {"Cherry", "Red", 3.00},
      {"Grape", "Purple", 2.50}, {"Lemon", "Yellow", 0.80}, {"Mango", "Orange", 1.80},
      {"Orange", "Orange", 0.90}, {"Pear", "Green", 1.10},  {"Plum", "Purple", 1.50},
      {"Kiwi", "Brown", 1.00},
  };
  return all;
}

const std::string& backend_body() {
  static const std::string body = [] {
    std::string s = "{\n  \"fruits\" : [\n";
    bool first = true;
    for (const Fruit& f : catalogue()) {
      char line[160];
      std::snprintf(line, sizeof line, "%s    { \"name\" : \"%s\", \"color\" : \"%s\", \"price\" : %.2f }",
                    first ? "" : ",\n", f.name.c_str(), f.color.c_str(), f.price);
      first = false;
      s += line;
    }
    s += "\n  ]\n}\n";
    return s;
  }();
  return body;
}

std::string compact_json(const std::vector<Fruit>& fruits) {
  Buffer buf;
  Writer w(buf);
  w.StartObject();
  w.Key("fruits");
  w.StartArray();
  for (const Fruit& f : fruits) {
    w.StartObject();
    w.Key("name");
    w.String(f.name.data(), static_cast<rapidjson::SizeType>(f.name.size()));
    w.Key("color");
    w.String(f.color.data(), static_cast<rapidjson::SizeType>(f.color.size()));
    w.Key("price");
    w.Double(f.price);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

bool parse(std::string_view body, std::vector<Fruit>& out, std::string& error) {
  Document doc;
  doc.Parse(body.data(), body.size());
  if (doc.HasParseError()) {
    error = std::string("invalid JSON: ") + rapidjson::GetParseError_En(doc.GetParseError());
    return false;
  }
  if (!doc.IsObject() || !doc.HasMember("fruits") || !doc["fruits"].IsArray()) {
    error = "JSON has no \"fruits\" array";
    return false;
  }
  out.clear();
  for (const auto& v : doc["fruits"].GetArray()) {
    if (!v.IsObject() || !v.HasMember("name") || !v["name"].IsString() || !v.HasMember("color") ||
        !v["color"].IsString() || !v.HasMember("price") || !v["price"].IsNumber()) {
      error = "a fruit lacks name, color or price";
      return false;
    }
    out.push_back({v["name"].GetString(), v["color"].GetString(), v["price"].GetDouble()});
  }
  return true;
}

}  // namespace platoon::fruits
