// The host side of the procedure C ABI (include/duet/procedure.h): the function table every
// call's duet_txn and duet_reply carry. Each function checks its arguments (null pointers,
// ranges, names) and answers a DUET_* code; none throws (allocation failures answer
// DUET_ERR_NO_MEMORY) and nothing it hands out needs freeing by the procedure: it lives in the
// call's CallState until the entry point returns.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>
#include <new>

#include "procedure/internal.hpp"

namespace duet::procedure {

namespace {

CallState* st(duet_txn* t) { return t ? static_cast<CallState*>(t->impl) : nullptr; }
ReplyState* rs(duet_reply* r) { return r ? static_cast<ReplyState*>(r->impl) : nullptr; }

/// A Status as a DUET_* code (a transaction that ended reads as DUET_ERR_ABORTED).
int code_of(const Status& s, const CallState* c) {
  if (s.ok()) return DUET_OK;
  if (c && c->txn && !c->txn->active()) return DUET_ERR_ABORTED;
  switch (s.code()) {
    case StatusCode::kResourceExhausted: return DUET_ERR_NO_MEMORY;
    case StatusCode::kUnavailable: return DUET_ERR_UNAVAILABLE;
    default: return DUET_ERR_INVALID;
  }
}

bool bytes_ok(const char* p, std::size_t n) { return p != nullptr || n == 0; }
std::string_view view(const char* p, std::size_t n) { return n ? std::string_view(p, n) : std::string_view(); }
std::string_view view(const duet_bytes& b) { return view(b.data, b.len); }
duet_bytes bytes_of(std::string_view s) { return duet_bytes{s.data(), s.size()}; }

/// Runs f() and maps a thrown bad_alloc (from the containers) to DUET_ERR_NO_MEMORY.
template <class F>
int guarded(F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return DUET_ERR_NO_MEMORY;
  } catch (...) {
    return DUET_ERR_FAILED;
  }
}

bool range_of(const duet_range* r, TxnRange* out) {
  if (!r || !bytes_ok(r->start.data, r->start.len) || !bytes_ok(r->end.data, r->end.len)) return false;
  if (r->flags & ~std::uint32_t{15}) return false;
  out->start.assign(view(r->start));
  out->end.assign(view(r->end));
  out->start_inclusive = !(r->flags & DUET_RANGE_START_EXCLUSIVE);
  out->end_inclusive = !(r->flags & DUET_RANGE_END_EXCLUSIVE);
  out->start_unbounded = (r->flags & DUET_RANGE_START_UNBOUNDED) != 0;
  out->end_unbounded = (r->flags & DUET_RANGE_END_UNBOUNDED) != 0;
  return true;
}

// ---- transaction ----

int h_get(duet_txn* t, const char* key, std::size_t klen, duet_bytes* value) {
  CallState* c = st(t);
  if (!c || !value || !bytes_ok(key, klen)) return DUET_ERR_INVALID;
  return guarded([&]() -> int {
    std::string& v = c->strings.emplace_back();
    bool found = false;
    if (Status s = c->txn->get(view(key, klen), &v, &found); !s.ok()) return code_of(s, c);
    *value = bytes_of(v);
    return found ? DUET_OK : DUET_NOT_FOUND;
  });
}

int h_get_many(duet_txn* t, const duet_bytes* keys, std::size_t n, duet_bytes* values, int* found) {
  CallState* c = st(t);
  if (!c || (n != 0 && (!keys || !values || !found))) return DUET_ERR_INVALID;
  for (std::size_t i = 0; i < n; ++i)
    if (!bytes_ok(keys[i].data, keys[i].len)) return DUET_ERR_INVALID;
  return guarded([&]() -> int {
    std::vector<std::string_view> ks(n);
    for (std::size_t i = 0; i < n; ++i) ks[i] = view(keys[i]);
    std::vector<std::string> vs(n);
    std::unique_ptr<bool[]> fs(new bool[n]);
    if (Status s = c->txn->get_many(ks.data(), n, vs.data(), fs.get()); !s.ok()) return code_of(s, c);
    for (std::size_t i = 0; i < n; ++i) {
      values[i] = bytes_of(c->strings.emplace_back(std::move(vs[i])));
      found[i] = fs[i] ? 1 : 0;
    }
    return DUET_OK;
  });
}

int h_put(duet_txn* t, const char* key, std::size_t klen, const char* val, std::size_t vlen) {
  CallState* c = st(t);
  if (!c || !bytes_ok(key, klen) || !bytes_ok(val, vlen)) return DUET_ERR_INVALID;
  if (c->read_only) return DUET_ERR_READ_ONLY;
  return guarded([&]() -> int { return code_of(c->txn->put(view(key, klen), view(val, vlen)), c); });
}

int h_del(duet_txn* t, const char* key, std::size_t klen) {
  CallState* c = st(t);
  if (!c || !bytes_ok(key, klen)) return DUET_ERR_INVALID;
  if (c->read_only) return DUET_ERR_READ_ONLY;
  return guarded([&]() -> int { return code_of(c->txn->del(view(key, klen)), c); });
}

int h_scan(duet_txn* t, const duet_range* range, std::size_t limit, duet_pairs* out) {
  CallState* c = st(t);
  TxnRange r;
  if (!c || !out || !range_of(range, &r)) return DUET_ERR_INVALID;
  return guarded([&]() -> int {
    std::vector<std::pair<std::string, std::string>> kv;
    bool more = false;
    std::string& resume = c->strings.emplace_back();
    if (Status s = c->txn->scan(r, limit, &kv, &more, &resume); !s.ok()) return code_of(s, c);
    auto& keys = c->byte_lists.emplace_back();
    auto& vals = c->byte_lists.emplace_back();
    keys.reserve(kv.size());
    vals.reserve(kv.size());
    for (auto& [k, v] : kv) {
      keys.push_back(bytes_of(c->strings.emplace_back(std::move(k))));
      vals.push_back(bytes_of(c->strings.emplace_back(std::move(v))));
    }
    *out = duet_pairs{kv.size(), keys.data(), vals.data(), more ? 1 : 0, bytes_of(resume)};
    return DUET_OK;
  });
}

// SNAPSHOT buffers a thread keeps from one call to the next, the largest kKeptSnapshots: a
// call's SNAPSHOT reuses their capacity instead of faulting in fresh pages (a CH Q1 through the
// server at 10 warehouses spent most of its time in page faults without them). A thread thus
// holds about the bytes of the largest SNAPSHOTs its calls took.
constexpr std::size_t kKeptSnapshots = 2;
thread_local std::vector<TxnSnapshot> t_kept_snapshots;

int h_snapshot(duet_txn* t, const duet_snapshot_arg* args, std::size_t n, duet_snapshot** out) {
  CallState* c = st(t);
  if (!c || !out || (!args && n)) return DUET_ERR_INVALID;
  return guarded([&]() -> int {
    std::vector<SnapshotArg> sargs;
    sargs.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (args[i].is_range) {
        TxnRange r;
        if (!range_of(&args[i].range, &r)) return DUET_ERR_INVALID;
        sargs.push_back(SnapshotArg::of(std::move(r), args[i].limit));
      } else {
        if (!bytes_ok(args[i].key.data, args[i].key.len)) return DUET_ERR_INVALID;
        sargs.push_back(SnapshotArg::point(std::string(view(args[i].key))));
      }
    }
    duet_snapshot& s = c->snapshots.emplace_back();
    if (!t_kept_snapshots.empty()) {
      s.s = std::move(t_kept_snapshots.back());
      t_kept_snapshots.pop_back();
    }
    if (Status e = c->txn->snapshot(sargs, &s.s); !e.ok()) return code_of(e, c);
    *out = &s;
    return DUET_OK;
  });
}

int h_snapshot_view(const duet_snapshot* s, duet_snapshot_view* out) {
  if (!s || !out) return DUET_ERR_INVALID;
  const TxnSnapshot& x = s->s;
  *out = duet_snapshot_view{x.size(),
                            x.arg_offsets.size() - 1,
                            x.key_offsets.data(),
                            x.value_offsets.data(),
                            x.arg_offsets.data(),
                            x.present.data(),
                            x.key_bytes.data(),
                            x.value_bytes.data()};
  return DUET_OK;
}

std::uint64_t h_start_ts(duet_txn* t) { return st(t) ? st(t)->txn->start_ts() : 0; }
int h_read_only(duet_txn* t) { return st(t) && st(t)->read_only ? 1 : 0; }
std::uint32_t h_attempt(duet_txn* t) { return st(t) ? st(t)->attempt : 0; }

// ---- compute ----

bool name_ok(const char* s) { return s != nullptr && std::strlen(s) <= 256; }

/// The ABI's predicates as the operators'; false for a bad name, comparison or byte string.
bool predicates_of(const duet_predicate* preds, std::size_t n, std::vector<compute::Predicate>* out) {
  out->resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const duet_predicate& p = preds[i];
    if (!name_ok(p.column) || p.cmp < DUET_LT || p.cmp > DUET_BETWEEN || !bytes_ok(p.s.data, p.s.len) ||
        !bytes_ok(p.s_hi.data, p.s_hi.len))
      return false;
    (*out)[i] = compute::Predicate{p.column, static_cast<compute::Cmp>(p.cmp), p.i,  p.i_hi, p.f,
                                   p.f_hi,   std::string(view(p.s)),          std::string(view(p.s_hi))};
  }
  return true;
}

/// The ABI's aggregates as the operators'; false for a bad operation or name.
bool aggs_of(const duet_agg* aggs, std::size_t n, std::vector<compute::Agg>* out) {
  out->clear();
  for (std::size_t i = 0; i < n; ++i) {
    if (aggs[i].op < DUET_COUNT || aggs[i].op > DUET_MAX || !name_ok(aggs[i].name) ||
        (aggs[i].op != DUET_COUNT && !name_ok(aggs[i].column)))
      return false;
    out->push_back(compute::Agg{static_cast<compute::Agg::Op>(aggs[i].op),
                                aggs[i].op == DUET_COUNT ? std::string() : std::string(aggs[i].column), aggs[i].name});
  }
  return true;
}

/// A procedure or mirror name: 1-64 of [A-Za-z0-9_.-].
bool short_name_ok(const char* s) {
  if (!s) return false;
  const std::size_t n = std::strlen(s);
  if (n == 0 || n > 64) return false;
  for (std::size_t i = 0; i < n; ++i) {
    const char c = s[i];
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') return false;
  }
  return true;
}

/// The fields of the row codec; false for a bad name or type.
bool fields_of(const duet_field* fields, std::size_t n, std::vector<compute::Field>* out) {
  if (!fields || n == 0 || n > 4096) return false;
  out->clear();
  for (std::size_t i = 0; i < n; ++i) {
    if (!name_ok(fields[i].name) || fields[i].type < DUET_INT64 || fields[i].type > DUET_BYTES) return false;
    out->push_back(compute::Field{fields[i].name, static_cast<compute::Type>(fields[i].type), fields[i].width});
  }
  return true;
}

// decode and decode_columns: the rows' layout from `fields`, then every column (names null) or
// the named ones.
int decode_table(duet_txn* t, const duet_snapshot* s, const duet_field* fields, std::size_t nfields,
                 const char* const* names, std::size_t nnames, int with_key, duet_table** out) {
  CallState* c = st(t);
  if (!c || !s || !out) return DUET_ERR_INVALID;
  if (names && (nnames == 0 || nnames > nfields)) return DUET_ERR_INVALID;
  return guarded([&]() -> int {
    std::vector<compute::Field> fs;
    if (!fields_of(fields, nfields, &fs)) return DUET_ERR_INVALID;
    std::vector<std::string> wanted;
    for (std::size_t i = 0; names && i < nnames; ++i) {
      if (!name_ok(names[i])) return DUET_ERR_INVALID;
      wanted.emplace_back(names[i]);
    }
    compute::RowCodec codec;
    if (Status e = compute::RowCodec::make(std::move(fs), &codec); !e.ok()) return DUET_ERR_INVALID;
    duet_table& tab = c->tables.emplace_back();
    const compute::RowCodec::Slots slots = compute::RowCodec::slots_of(s->s);
    const Status e = names ? codec.decode_fields(slots, wanted, &tab.t, with_key != 0)
                           : codec.decode(slots, &tab.t, with_key != 0);
    if (!e.ok()) return code_of(e, nullptr);
    *out = &tab;
    return DUET_OK;
  });
}

int h_decode(duet_txn* t, const duet_snapshot* s, const duet_field* fields, std::size_t nfields, int with_key,
             duet_table** out) {
  return decode_table(t, s, fields, nfields, nullptr, 0, with_key, out);
}

int h_decode_columns(duet_txn* t, const duet_snapshot* s, const duet_field* fields, std::size_t nfields,
                     const char* const* names, std::size_t nnames, int with_key, duet_table** out) {
  if (!names) return DUET_ERR_INVALID;
  return decode_table(t, s, fields, nfields, names, nnames, with_key, out);
}

std::size_t h_table_rows(const duet_table* t) { return t ? t->t.rows() : 0; }

int h_column(const duet_table* t, const char* name, duet_column_view* out) {
  if (!t || !name || !out) return DUET_ERR_INVALID;
  const compute::Column* col = t->t.get(name);
  if (!col) return DUET_ERR_INVALID;
  *out = duet_column_view{static_cast<duet_type>(col->type()), col->width(), col->rows(), col->data()};
  return DUET_OK;
}

int h_filter(duet_txn* t, const duet_table* table, const duet_predicate* preds, std::size_t n, const std::uint32_t** rows,
             std::size_t* count) {
  CallState* c = st(t);
  if (!c || !table || !rows || !count || (!preds && n) || n > 4096) return DUET_ERR_INVALID;
  return guarded([&]() -> int {
    std::vector<compute::Predicate> ps;
    if (!predicates_of(preds, n, &ps)) return DUET_ERR_INVALID;
    compute::Context* ctx = nullptr;
    if (Status e = c->context(&ctx); !e.ok()) return code_of(e, nullptr);
    compute::Selection& sel = c->selections.emplace_back();
    if (Status e = ctx->filter(table->t, ps, &sel); !e.ok()) return code_of(e, nullptr);
    *rows = sel.data();
    *count = sel.size();
    return DUET_OK;
  });
}

int h_aggregate(duet_txn* t, const duet_table* table, const std::uint32_t* sel, std::size_t nsel,
                const char* const* keys, std::size_t nkeys, const duet_agg* aggs, std::size_t naggs, duet_table** out) {
  CallState* c = st(t);
  if (!c || !table || !out || (!sel && nsel) || (!keys && nkeys) || (!aggs && naggs) || nkeys > 4 || naggs > 16)
    return DUET_ERR_INVALID;
  return guarded([&]() -> int {
    std::vector<std::string> ks;
    for (std::size_t i = 0; i < nkeys; ++i) {
      if (!name_ok(keys[i])) return DUET_ERR_INVALID;
      ks.emplace_back(keys[i]);
    }
    std::vector<compute::Agg> as;
    if (!aggs_of(aggs, naggs, &as)) return DUET_ERR_INVALID;
    compute::Selection s;
    if (sel) s.assign(sel, sel + nsel);
    compute::Context* ctx = nullptr;
    if (Status e = c->context(&ctx); !e.ok()) return code_of(e, nullptr);
    duet_table& tab = c->tables.emplace_back();
    if (Status e = ctx->aggregate(table->t, sel ? &s : nullptr, ks, as, &tab.t); !e.ok()) return code_of(e, nullptr);
    *out = &tab;
    return DUET_OK;
  });
}

int h_model_load(duet_txn* t, const duet_dense* layers, std::size_t n, std::uint32_t* model) {
  CallState* c = st(t);
  if (!c || !layers || !model || n == 0 || n > 64) return DUET_ERR_INVALID;
  return guarded([&]() -> int {
    compute::Mlp m;
    for (std::size_t i = 0; i < n; ++i) {
      const duet_dense& d = layers[i];
      if (d.act < DUET_ACT_NONE || d.act > DUET_ACT_SIGMOID || d.in == 0 || d.out == 0 || d.in > (1u << 16) ||
          d.out > (1u << 16) || !d.w || !d.b)
        return DUET_ERR_INVALID;
      compute::Dense L;
      L.act = static_cast<compute::Dense::Act>(d.act);
      L.in = d.in;
      L.out = d.out;
      L.w.assign(d.w, d.w + static_cast<std::size_t>(d.in) * d.out);
      L.b.assign(d.b, d.b + d.out);
      m.layers.push_back(std::move(L));
    }
    if (Status e = m.check(); !e.ok()) return DUET_ERR_INVALID;
    compute::ModelId id = 0;
    if (Status e = c->shared->model(m, &id); !e.ok()) return code_of(e, nullptr);
    *model = id;
    return DUET_OK;
  });
}

int h_infer(duet_txn* t, std::uint32_t model, const float* x, std::size_t rows, const float** y, std::size_t* ny) {
  CallState* c = st(t);
  if (!c || !y || !ny || (!x && rows)) return DUET_ERR_INVALID;
  return guarded([&]() -> int {
    compute::Context* ctx = nullptr;
    if (Status e = c->context(&ctx); !e.ok()) return code_of(e, nullptr);
    std::shared_ptr<compute::Engine> eng;
    if (Status e = c->shared->engine(&eng); !e.ok()) return code_of(e, nullptr);
    const compute::Mlp* m = eng->model(model);
    if (!m) return DUET_ERR_INVALID;
    std::vector<float>& out = c->floats.emplace_back();
    if (Status e = ctx->infer(model, std::span<const float>(x, rows * m->inputs()), rows, &out); !e.ok())
      return code_of(e, nullptr);
    *y = out.data();
    *ny = out.size();
    return DUET_OK;
  });
}

int h_gpu_stream(duet_txn* t, void** stream) {
  CallState* c = st(t);
  if (!c || !stream) return DUET_ERR_INVALID;
  if (!c->stream) {
    if (Status e = gpu_stream_lease(&c->stream); !e.ok()) return code_of(e, nullptr);
  }
  *stream = c->stream;
  return DUET_OK;
}

// ---- reply ----

// ---- column mirrors ----

int h_mirror_attach(duet_txn* t, const duet_mirror_def* d) {
  CallState* c = st(t);
  if (!c || !c->space || !d || !short_name_ok(d->name) || (!d->columns && d->ncolumns) || d->ncolumns == 0 ||
      d->ncolumns > 64 || d->key_len == 0 || d->key_len > 4096 || d->id_from >= d->key_len ||
      d->key_len - d->id_from > 8 || d->query_threads > 1024)
    return DUET_ERR_INVALID;
  const duet_range& r = d->range;
  if (r.flags != DUET_RANGE_END_EXCLUSIVE || !bytes_ok(r.start.data, r.start.len) || !bytes_ok(r.end.data, r.end.len))
    return DUET_ERR_INVALID;
  return guarded([&]() -> int {
    Shared::MirrorDef def;
    def.name = d->name;
    def.lo.assign(view(r.start));
    def.hi.assign(view(r.end));
    if (!fields_of(d->fields, d->nfields, &def.fields)) return DUET_ERR_INVALID;
    for (std::size_t i = 0; i < d->ncolumns; ++i) {
      if (!name_ok(d->columns[i])) return DUET_ERR_INVALID;
      def.columns.emplace_back(d->columns[i]);
    }
    def.key_len = d->key_len;
    def.id_from = d->id_from;
    def.device_copy = d->device_copy != 0;
    def.query_threads = std::max(1u, d->query_threads);
    return code_of(c->shared->attach_mirror(*c->space, def), nullptr);
  });
}

int h_mirror_aggregate(duet_txn* t, const char* name, const duet_predicate* preds, std::size_t npreds, const char* group,
                       const duet_agg* aggs, std::size_t naggs, duet_table** out) {
  CallState* c = st(t);
  if (!c || !c->space || !short_name_ok(name) || !out || (!preds && npreds) || (!aggs && naggs) || npreds > 8 ||
      naggs > 8 || naggs == 0 || (group && !name_ok(group)))
    return DUET_ERR_INVALID;
  return guarded([&]() -> int {
    std::shared_ptr<compute::ColumnMirror> m;
    unsigned threads = 1;
    if (Status e = c->shared->find_mirror(c->space->get(), name, &m, &threads); !e.ok())
      return e.code() == StatusCode::kNotFound ? DUET_NOT_FOUND : code_of(e, c);
    compute::ColumnMirror::Query q;
    if (!predicates_of(preds, npreds, &q.where) || !aggs_of(aggs, naggs, &q.aggs)) return DUET_ERR_INVALID;
    if (group) q.group = group;
    const std::uint64_t start = c->txn->start_ts();
    // A mirror made after this transaction began cannot answer at its start.
    if (start < m->built_at()) return DUET_ERR_UNAVAILABLE;
    duet_table& tab = c->tables.emplace_back();
    const Status e = m->aggregate(start, q, &tab.t, compute::Device::kAuto, threads);
    if (e.code() == StatusCode::kResourceExhausted) return DUET_ERR_ABORTED;  // snapshot too old, or full
    if (!e.ok()) return code_of(e, c);
    *out = &tab;
    return DUET_OK;
  });
}

bool text_ok(const char* s) { return s != nullptr && std::strpbrk(s, "\r\n") == nullptr; }

int add(duet_reply* r, ProcReply v) {
  ReplyState* s = rs(r);
  if (!s) return DUET_ERR_INVALID;
  return guarded([&]() -> int { return s->add(std::move(v)) ? DUET_OK : DUET_ERR_INVALID; });
}

int h_reply_int(duet_reply* r, std::int64_t v) {
  ProcReply x;
  x.kind = ProcReply::Kind::kInt;
  x.i = v;
  return add(r, std::move(x));
}
int h_reply_bulk(duet_reply* r, const char* d, std::size_t n) {
  if (!bytes_ok(d, n) || n > (512u << 20)) return DUET_ERR_INVALID;
  return guarded([&]() -> int {
    ProcReply x;
    x.kind = ProcReply::Kind::kBulk;
    x.s.assign(view(d, n));
    return add(r, std::move(x));
  });
}
int h_reply_simple(duet_reply* r, const char* text) {
  if (!text_ok(text)) return DUET_ERR_INVALID;
  return guarded([&]() -> int {
    ProcReply x;
    x.kind = ProcReply::Kind::kSimple;
    x.s = text;
    return add(r, std::move(x));
  });
}
int h_reply_error(duet_reply* r, const char* text) {
  if (!text_ok(text)) return DUET_ERR_INVALID;
  return guarded([&]() -> int {
    ProcReply x;
    x.kind = ProcReply::Kind::kError;
    // "CODE message": a first word of upper-case letters (and digits, underscores) is a code.
    std::size_t n = 0;
    while (text[n] && ((text[n] >= 'A' && text[n] <= 'Z') || (n && ((text[n] >= '0' && text[n] <= '9') || text[n] == '_'))))
      ++n;
    const bool coded = n > 0 && (text[n] == ' ' || text[n] == 0);
    x.s = coded ? std::string(text) : "ERR " + std::string(text);
    return add(r, std::move(x));
  });
}
int h_reply_nil(duet_reply* r) { return add(r, ProcReply{}); }
int h_reply_array(duet_reply* r, std::size_t n) {
  if (n > (1u << 24)) return DUET_ERR_INVALID;
  ProcReply x;
  x.kind = ProcReply::Kind::kArray;
  x.i = static_cast<std::int64_t>(n);
  return add(r, std::move(x));
}

const duet_api kApi = {
    DUET_PROCEDURE_ABI_VERSION,
    sizeof(duet_api),
    h_get,
    h_put,
    h_del,
    h_scan,
    h_snapshot,
    h_snapshot_view,
    h_start_ts,
    h_read_only,
    h_attempt,
    h_decode,
    h_table_rows,
    h_column,
    h_filter,
    h_aggregate,
    h_model_load,
    h_infer,
    h_gpu_stream,
    h_reply_int,
    h_reply_bulk,
    h_reply_simple,
    h_reply_error,
    h_reply_nil,
    h_reply_array,
    h_decode_columns,
    h_get_many,
    h_mirror_attach,
    h_mirror_aggregate,
};

}  // namespace

const duet_api* host_api() { return &kApi; }

bool ReplyState::add(ProcReply v) {
  if (complete()) return false;
  const bool is_array = v.kind == ProcReply::Kind::kArray;
  const std::size_t n = is_array ? static_cast<std::size_t>(v.i) : 0;
  if (is_array) v.i = 0;
  ProcReply* node;
  if (!started) {
    started = true;
    root = std::move(v);
    node = &root;
  } else {
    // Only the innermost open array grows, so the ancestors on `open` keep their addresses.
    ProcReply* parent = open.back().first;
    parent->items.push_back(std::move(v));
    node = &parent->items.back();
  }
  if (is_array && n > 0) {
    node->items.reserve(std::min<std::size_t>(n, 1024));
    open.emplace_back(node, n);
  }
  while (!open.empty() && open.back().first->items.size() == open.back().second) open.pop_back();
  return true;
}

CallState::~CallState() {
  // The call's SNAPSHOT buffers go back to the thread, the largest first.
  auto& kept = t_kept_snapshots;
  try {
    for (duet_snapshot& s : snapshots) kept.push_back(std::move(s.s));
  } catch (const std::bad_alloc&) {  // keeping them is only an optimisation
  }
  std::sort(kept.begin(), kept.end(), [](const TxnSnapshot& a, const TxnSnapshot& b) {
    return a.value_bytes.capacity() > b.value_bytes.capacity();
  });
  if (kept.size() > kKeptSnapshots) kept.resize(kKeptSnapshots);
  for (TxnSnapshot& s : kept) s.clear();
  ctx.reset();
  if (stream) gpu_stream_return(stream);
}

Status CallState::context(compute::Context** out) {
  if (!ctx) {
    std::shared_ptr<compute::Engine> eng;
    if (Status s = shared->engine(&eng); !s.ok()) return s;
    if (Status s = eng->context(compute::Device::kAuto, &ctx); !s.ok()) return s;
  }
  *out = ctx.get();
  return Status::Ok();
}

Status Shared::engine(std::shared_ptr<compute::Engine>* out) {
  std::lock_guard<std::mutex> lk(m_);
  if (!engine_) {
    compute::EngineConfig cfg;
    cfg.device = device;
    if (Status s = compute::Engine::open(cfg, &engine_); !s.ok()) return s;
  }
  *out = engine_;
  return Status::Ok();
}

Status Shared::model(const compute::Mlp& m, compute::ModelId* id) {
  std::string key;
  for (const auto& L : m.layers) {
    const std::uint32_t head[3] = {static_cast<std::uint32_t>(L.act), L.in, L.out};
    key.append(reinterpret_cast<const char*>(head), sizeof head);
    key.append(reinterpret_cast<const char*>(L.w.data()), L.w.size() * sizeof(float));
    key.append(reinterpret_cast<const char*>(L.b.data()), L.b.size() * sizeof(float));
  }
  std::shared_ptr<compute::Engine> eng;
  if (Status s = engine(&eng); !s.ok()) return s;
  std::lock_guard<std::mutex> lk(m_);
  if (auto it = models_.find(key); it != models_.end()) {
    *id = it->second;
    return Status::Ok();
  }
  if (Status s = eng->load_model(m, id); !s.ok()) return s;
  models_.emplace(std::move(key), *id);
  return Status::Ok();
}

bool Shared::MirrorDef::operator==(const MirrorDef& o) const {
  if (name != o.name || lo != o.lo || hi != o.hi || columns != o.columns || key_len != o.key_len ||
      id_from != o.id_from || device_copy != o.device_copy || query_threads != o.query_threads ||
      fields.size() != o.fields.size())
    return false;
  for (std::size_t i = 0; i < fields.size(); ++i)
    if (fields[i].name != o.fields[i].name || fields[i].type != o.fields[i].type || fields[i].width != o.fields[i].width)
      return false;
  return true;
}

Status Shared::attach_mirror(const std::shared_ptr<TxnSpace>& space, const MirrorDef& def) {
  std::lock_guard<std::mutex> lk(mirrors_m_);
  std::erase_if(mirrors_, [](const Mirror& m) { return m.space.expired(); });
  std::size_t on_space = 0;
  for (const Mirror& m : mirrors_)
    if (m.space.lock() == space) {
      if (m.def.name == def.name) {
        if (m.def == def) return Status::Ok();
        return Status::InvalidArgument("this keyspace already has a column mirror '" + m.def.name +
                                       "', defined otherwise");
      }
      ++on_space;
    }
  if (on_space >= kMaxMirrorsPerKeyspace)
    return Status::InvalidArgument("this keyspace already has " + std::to_string(on_space) +
                                   " column mirrors, the most it takes");
  compute::ColumnMirror::Config cfg;
  cfg.lo = def.lo;
  cfg.hi = def.hi;
  if (Status s = compute::RowCodec::make(def.fields, &cfg.codec); !s.ok()) return s;
  cfg.columns = def.columns;
  cfg.device_copy = def.device_copy;
  const std::uint32_t key_len = def.key_len, from = def.id_from;
  cfg.key_id = [key_len, from](std::string_view k, std::uint64_t* id) {
    if (k.size() != key_len) return false;
    std::uint64_t x = 0;
    for (std::size_t i = from; i < key_len; ++i) x = (x << 8) | static_cast<unsigned char>(k[i]);
    *id = x;
    return true;
  };
  std::shared_ptr<compute::ColumnMirror> m;
  if (Status s = compute::ColumnMirror::attach(space, std::move(cfg), &m); !s.ok()) return s;
  mirrors_.push_back(Mirror{space, def, std::move(m)});
  return Status::Ok();
}

Status Shared::find_mirror(const TxnSpace* space, std::string_view name, std::shared_ptr<compute::ColumnMirror>* out,
                           unsigned* threads) {
  std::lock_guard<std::mutex> lk(mirrors_m_);
  // A dropped keyspace's mirror is let go here (its rows can be large).
  std::erase_if(mirrors_, [](const Mirror& m) { return m.space.expired(); });
  for (const Mirror& m : mirrors_)
    if (m.def.name == name && m.space.lock().get() == space) {
      *out = m.mirror;
      *threads = m.def.query_threads;
      return Status::Ok();
    }
  return Status::NotFound("no column mirror '" + std::string(name) + "' on this keyspace");
}

}  // namespace duet::procedure
