#include "importers/located_json.hpp"

#include <string>
#include <unordered_set>
#include <utility>

#include "core/error.hpp"
#include "core/input_file.hpp"

namespace hetplan::importers {
namespace {

constexpr int kMaxJsonNesting = 64;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

class Parser {
 public:
  Parser(std::string_view text, const std::string& file) : text_(text), file_(file) {}

  LocatedJson parse_document(std::string_view root_object) {
    skip_space();
    if (!root_object.empty() && pos_ < text_.size() && text_[pos_] != '{')
      fail("expected " + std::string(root_object) + ", got " + describe_here());
    LocatedJson root = parse_value(1);
    skip_space();
    if (pos_ < text_.size()) fail("expected the end of the JSON document, got " + describe_here());
    return root;
  }

 private:
  [[noreturn]] void fail(std::string message) const {
    throw InputError({file_, line_, column()}, "", std::move(message));
  }

  int column() const { return static_cast<int>(pos_ - line_start_) + 1; }

  std::string describe_here() const {
    if (pos_ >= text_.size()) return "end of input";
    const auto c = static_cast<unsigned char>(text_[pos_]);
    if (c >= 0x21 && c < 0x7f) return std::string("'") + static_cast<char>(c) + "'";
    static constexpr char kHex[] = "0123456789abcdef";
    return std::string("byte 0x") + kHex[c >> 4] + kHex[c & 0xf];
  }

  void skip_space() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '\n') {
        ++pos_;
        ++line_;
        line_start_ = pos_;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        ++pos_;
      } else {
        break;
      }
    }
  }

  bool at(char c) const { return pos_ < text_.size() && text_[pos_] == c; }

  LocatedJson parse_value(int depth) {
    if (depth > kMaxJsonNesting) {
      fail("expected at most " + std::to_string(kMaxJsonNesting) +
           " levels of nesting, got deeper");
    }
    LocatedJson value;
    value.line = line_;
    value.column = column();
    if (pos_ >= text_.size()) fail("expected a JSON value, got end of input");
    const char c = text_[pos_];
    if (c == '{') {
      parse_object(value, depth);
    } else if (c == '[') {
      parse_array(value, depth);
    } else if (c == '"') {
      value.kind = LocatedJson::Kind::string;
      value.text = parse_string();
    } else if (c == '-' || is_digit(c)) {
      value.kind = LocatedJson::Kind::number;
      value.text = parse_number();
    } else if (literal("true")) {
      value.kind = LocatedJson::Kind::boolean;
      value.boolean = true;
    } else if (literal("false")) {
      value.kind = LocatedJson::Kind::boolean;
    } else if (literal("null")) {
      value.kind = LocatedJson::Kind::null;
    } else {
      fail("expected a JSON value, got " + describe_here());
    }
    return value;
  }

  bool literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  void parse_object(LocatedJson& value, int depth) {
    value.kind = LocatedJson::Kind::object;
    ++pos_;  // '{'
    skip_space();
    if (at('}')) {
      ++pos_;
      return;
    }
    std::unordered_set<std::string> seen;
    while (true) {
      if (!at('"')) fail("expected a string key, got " + describe_here());
      const int key_line = line_;
      const int key_column = column();
      std::string key = parse_string();
      if (!seen.insert(key).second) {
        throw InputError({file_, key_line, key_column}, "",
                         "expected unique keys, got " + hetplan::quoted(key) + " twice");
      }
      skip_space();
      if (!at(':')) fail("expected ':' after the key, got " + describe_here());
      ++pos_;
      skip_space();
      LocatedJson member = parse_value(depth + 1);
      value.keys.push_back(std::move(key));
      value.items.push_back(std::move(member));
      skip_space();
      if (at(',')) {
        ++pos_;
        skip_space();
        continue;
      }
      if (at('}')) {
        ++pos_;
        return;
      }
      fail("expected ',' or '}', got " + describe_here());
    }
  }

  void parse_array(LocatedJson& value, int depth) {
    value.kind = LocatedJson::Kind::array;
    ++pos_;  // '['
    skip_space();
    if (at(']')) {
      ++pos_;
      return;
    }
    while (true) {
      value.items.push_back(parse_value(depth + 1));
      skip_space();
      if (at(',')) {
        ++pos_;
        skip_space();
        continue;
      }
      if (at(']')) {
        ++pos_;
        return;
      }
      fail("expected ',' or ']', got " + describe_here());
    }
  }

  std::string parse_number() {
    const std::size_t start = pos_;
    auto digits = [&] {
      if (pos_ >= text_.size() || !is_digit(text_[pos_]))
        fail("expected a digit, got " + describe_here());
      while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
    };
    if (at('-')) ++pos_;
    if (at('0')) {
      ++pos_;
    } else {
      digits();
    }
    if (at('.')) {
      ++pos_;
      digits();
    }
    if (at('e') || at('E')) {
      ++pos_;
      if (at('+') || at('-')) ++pos_;
      digits();
    }
    return std::string(text_.substr(start, pos_ - start));
  }

  unsigned hex4() {
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      if (pos_ >= text_.size()) fail("expected 4 hex digits after \\u, got end of input");
      const char c = text_[pos_];
      unsigned digit = 0;
      if (is_digit(c)) {
        digit = static_cast<unsigned>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        digit = static_cast<unsigned>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        digit = static_cast<unsigned>(c - 'A' + 10);
      } else {
        fail("expected 4 hex digits after \\u, got " + describe_here());
      }
      code = code * 16 + digit;
      ++pos_;
    }
    return code;
  }

  static void append_utf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xc0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xe0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    }
  }

  std::string parse_string() {
    ++pos_;  // '"'
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) fail("expected '\"' to close the string, got end of input");
      const char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) {
        fail("expected '\"' to close the string or an escaped control character, got " +
             describe_here());
      }
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      ++pos_;
      if (pos_ >= text_.size()) fail("expected an escape after '\\', got end of input");
      const char e = text_[pos_];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          ++pos_;
          unsigned code = hex4();
          if (code >= 0xdc00 && code <= 0xdfff) fail("expected a high surrogate before a low one");
          if (code >= 0xd800 && code <= 0xdbff) {
            if (text_.substr(pos_, 2) != "\\u") {
              fail("expected a low surrogate \\uDC00-\\uDFFF, got " + describe_here());
            }
            pos_ += 2;
            const unsigned low = hex4();
            if (low < 0xdc00 || low > 0xdfff) {
              fail("expected a low surrogate \\uDC00-\\uDFFF after a high one");
            }
            code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
          }
          append_utf8(out, code);
          continue;  // hex4 already advanced
        }
        default:
          fail("expected one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u, got " + describe_here());
      }
      ++pos_;
    }
  }

  std::string_view text_;
  const std::string& file_;
  std::size_t pos_ = 0;
  std::size_t line_start_ = 0;
  int line_ = 1;
};

}  // namespace

const LocatedJson* LocatedJson::find(std::string_view key) const {
  for (std::size_t i = 0; i < keys.size() && i < items.size(); ++i) {
    if (keys[i] == key) return &items[i];
  }
  return nullptr;
}

std::string describe(const LocatedJson& value) {
  switch (value.kind) {
    case LocatedJson::Kind::null:
      return "null";
    case LocatedJson::Kind::boolean:
      return value.boolean ? "true" : "false";
    case LocatedJson::Kind::number:
      return value.text;
    case LocatedJson::Kind::string:
      return hetplan::quoted(value.text);
    case LocatedJson::Kind::array:
      return "a list";
    case LocatedJson::Kind::object:
      return "an object";
  }
  return "a value";
}

std::string_view without_bom(std::string_view text) {
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  return text.substr(0, kBom.size()) == kBom ? text.substr(kBom.size()) : text;
}

LocatedJson parse_located_json(std::string_view text, const std::string& file,
                               std::string_view root_object) {
  return Parser(without_bom(text), file).parse_document(root_object);
}

}  // namespace hetplan::importers
