// duet_si_check: runs the SI checker (si_checker.hpp) on a list-append history recorded
// outside C++ (the server tests record theirs through redis-py). Reads the history from the
// file named by its argument, or stdin; prints "ok N transactions" and exits 0, or prints the
// anomaly and exits 1; malformed input exits 2.
//
// Format, one record per line:
//   T id invoke complete committed        a transaction (committed: 0 or 1); its ops follow
//   R key LIST                            a read of key, which saw LIST
//   A key elem LIST                       an append of elem to key, which read LIST first
//   F key LIST                            key's final list, read after the run
// LIST is the stored value: elements as ",e1,e2,..." (empty for an absent key). Keys and
// elements are unsigned 64-bit integers.
#include <charconv>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "txn/si_checker.hpp"

namespace {

bool parse_u64(std::string_view s, std::uint64_t* v) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty();
}

bool parse_list(std::string_view s, duet::sicheck::List* out) {
  out->clear();
  while (!s.empty()) {
    if (s[0] != ',') return false;
    s.remove_prefix(1);
    const std::size_t n = std::min(s.find(','), s.size());
    std::uint64_t e;
    if (!parse_u64(s.substr(0, n), &e)) return false;
    out->push_back(e);
    s.remove_prefix(n);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace duet::sicheck;
  std::ifstream file;
  if (argc > 1) {
    file.open(argv[1]);
    if (!file) {
      std::fprintf(stderr, "duet_si_check: cannot open %s\n", argv[1]);
      return 2;
    }
  }
  std::istream& in = argc > 1 ? static_cast<std::istream&>(file) : std::cin;
  std::vector<TxnRec> h;
  std::map<std::uint64_t, List> final;
  std::string line;
  std::size_t lineno = 0;
  auto bad = [&](const char* why) {
    std::fprintf(stderr, "duet_si_check: line %zu: %s: %s\n", lineno, why, line.substr(0, 200).c_str());
    return 2;
  };
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    std::string_view rest(line);
    auto word = [&](std::string_view* w) {
      const std::size_t sp = rest.find(' ');
      *w = rest.substr(0, sp);
      rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
    };
    std::string_view tag, a, b, c, d;
    word(&tag);
    if (tag == "T") {
      TxnRec t;
      std::uint64_t committed;
      word(&a), word(&b), word(&c), word(&d);
      if (!parse_u64(a, &t.id) || !parse_u64(b, &t.invoke) || !parse_u64(c, &t.complete) || !parse_u64(d, &committed))
        return bad("bad transaction record");
      t.committed = committed != 0;
      h.push_back(std::move(t));
    } else if (tag == "R" || tag == "A" || tag == "F") {
      Op op{tag == "A" ? Op::kAppend : Op::kRead, 0, {}, 0};
      word(&a);
      if (!parse_u64(a, &op.key)) return bad("bad key");
      if (tag == "A") {
        word(&b);
        if (!parse_u64(b, &op.elem)) return bad("bad element");
      }
      if (!parse_list(rest, &op.list)) return bad("bad list");
      if (tag == "F") {
        final[op.key] = std::move(op.list);
        continue;
      }
      if (h.empty()) return bad("an operation before any transaction");
      if (tag == "A") op.list.push_back(op.elem);
      h.back().ops.push_back(std::move(op));
    } else {
      return bad("unknown record");
    }
  }
  const Result r = check(h, final);
  if (!r.ok) {
    std::printf("%s: %s\n", r.anomaly.c_str(), r.detail.substr(0, 2000).c_str());
    return 1;
  }
  std::printf("ok %zu transactions\n", h.size());
  return 0;
}
