/* OLDA's payment transaction as a native procedure (docs/compute.md, "OLDA"), so that a client of
 * the server runs one payment in one round trip. Keys and rows are src/compute/olda.hpp's:
 * 8-byte keys (user, slot) big-endian, slot 0 the profile {seq int64, home int64}, the payment
 * with sequence number s at slot 2^32 - 1 - s, {lat float64, lon float64, txn int64}.
 *
 *   FCALL olda_model 0 W1 b1 W2 b2      loads the 5-128-2 model (float32 little-endian blobs:
 *                                       W1 128x5, b1 128, W2 2x128, b2 2) into the process's
 *                                       compute engine; answers its id. Later calls use it.
 *   FCALL olda_pay 1 profile-key lat lon id
 *                                       lat, lon: float64 little-endian (8 bytes each); id:
 *                                       decimal. SNAPSHOT of the profile and the last payment,
 *                                       features, inference; when the model flags the payment
 *                                       answers "DECLINED" and writes nothing; else writes the
 *                                       payment and the profile and answers the new seq.
 *
 * A write conflict with another payment of the user re-runs the whole procedure (the host's
 * rule), so decisions are never made on stale history.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duet/procedure.h"

static atomic_uint g_model = 0;  /* the model's id + 1; 0 until olda_model ran */

static double get_f64(const char* p) {
  double v;
  memcpy(&v, p, 8);
  return v;
}
static int64_t get_i64(const char* p) {
  int64_t v;
  memcpy(&v, p, 8);
  return v;
}

static double haversine_km(double lat1, double lon1, double lat2, double lon2) {
  const double r = 3.14159265358979323846 / 180.0;
  const double s = sin((lat2 - lat1) * r / 2), t = sin((lon2 - lon1) * r / 2);
  double a = s * s + cos(lat1 * r) * cos(lat2 * r) * t * t;
  if (a < 0) a = 0;
  if (a > 1) a = 1;
  return 2.0 * 6371.0088 * asin(sqrt(a));
}

static void slot_key(char* k, const char* user4, uint32_t slot) {
  memcpy(k, user4, 4);
  k[4] = (char)(slot >> 24);
  k[5] = (char)(slot >> 16);
  k[6] = (char)(slot >> 8);
  k[7] = (char)slot;
}

static int olda_model(duet_txn* t, const duet_bytes* keys, size_t nkeys, const duet_bytes* args, size_t nargs,
                      duet_reply* r) {
  duet_dense layers[2];
  uint32_t id = 0;
  int rc;
  (void)keys;
  if (nkeys != 0 || nargs != 4 || args[0].len != 128 * 5 * 4 || args[1].len != 128 * 4 || args[2].len != 2 * 128 * 4 ||
      args[3].len != 2 * 4) {
    duet_reply_error(r, "ERR usage: FCALL olda_model 0 W1(128x5) b1(128) W2(2x128) b2(2), float32 little-endian");
    return DUET_ERR_INVALID;
  }
  layers[0].act = DUET_ACT_RELU;
  layers[0].in = 5;
  layers[0].out = 128;
  layers[0].w = (const float*)(const void*)args[0].data;
  layers[0].b = (const float*)(const void*)args[1].data;
  layers[1].act = DUET_ACT_SIGMOID;
  layers[1].in = 128;
  layers[1].out = 2;
  layers[1].w = (const float*)(const void*)args[2].data;
  layers[1].b = (const float*)(const void*)args[3].data;
  if ((rc = t->api->model_load(t, layers, 2, &id)) != DUET_OK) return rc;
  atomic_store(&g_model, id + 1);
  return duet_reply_int(r, id);
}

static int olda_pay(duet_txn* t, const duet_bytes* keys, size_t nkeys, const duet_bytes* args, size_t nargs,
                    duet_reply* r) {
  duet_snapshot_arg arg;
  duet_snapshot* snap = NULL;
  duet_snapshot_view v;
  char end[8], pkey[8], prof[16], pay[24], idbuf[24];
  const float* y = NULL;
  size_t ny = 0;
  float x[5];
  double lat, lon, plat, plon, km;
  int64_t seq, home, id;
  char* stop = NULL;
  int rc;
  const unsigned model = atomic_load(&g_model);
  if (nkeys != 1 || keys[0].len != 8 || nargs != 3 || args[0].len != 8 || args[1].len != 8 || args[2].len == 0 ||
      args[2].len >= sizeof idbuf) {
    duet_reply_error(r, "ERR usage: FCALL olda_pay 1 profile-key(8 bytes) lat(f64) lon(f64) id");
    return DUET_ERR_INVALID;
  }
  if (model == 0) {
    duet_reply_error(r, "ERR no model: call FCALL olda_model first");
    return DUET_ERR_FAILED;
  }
  memcpy(idbuf, args[2].data, args[2].len);
  idbuf[args[2].len] = 0;
  id = strtoll(idbuf, &stop, 10);
  if (*stop != 0) {
    duet_reply_error(r, "ERR olda_pay: id must be a decimal integer");
    return DUET_ERR_INVALID;
  }
  lat = get_f64(args[0].data);
  lon = get_f64(args[1].data);
  slot_key(end, keys[0].data, 0xFFFFFFFFu);
  memset(&arg, 0, sizeof arg);
  arg.is_range = 1;
  arg.range.start = keys[0];
  arg.range.end.data = end;
  arg.range.end.len = 8;
  arg.limit = 2;
  if ((rc = t->api->snapshot(t, &arg, 1, &snap)) != DUET_OK) return rc;
  if ((rc = t->api->snapshot_view(snap, &v)) != DUET_OK) return rc;
  if (v.slots < 2 || v.key_offsets[1] - v.key_offsets[0] != 8 || memcmp(v.key_bytes, keys[0].data, 8) != 0 ||
      v.value_offsets[1] - v.value_offsets[0] != 16 || v.value_offsets[2] - v.value_offsets[1] != 24) {
    duet_reply_error(r, "ERR olda_pay: no such user, or no prior payment");
    return DUET_ERR_FAILED;
  }
  seq = get_i64(v.value_bytes + v.value_offsets[0]);
  home = get_i64(v.value_bytes + v.value_offsets[0] + 8);
  plat = get_f64(v.value_bytes + v.value_offsets[1]);
  plon = get_f64(v.value_bytes + v.value_offsets[1] + 8);
  km = haversine_km(plat, plon, lat, lon);
  x[0] = (float)(km / 1000.0 < 2.0 ? km / 1000.0 : 2.0);
  x[1] = (float)(plat / 90.0);
  x[2] = (float)(plon / 180.0);
  x[3] = (float)(lat / 90.0);
  x[4] = (float)(lon / 180.0);
  if ((rc = t->api->infer(t, model - 1, x, 1, &y, &ny)) != DUET_OK) return rc;
  if (ny != 2) return DUET_ERR_FAILED;
  if (y[0] > y[1]) return duet_reply_simple(r, "DECLINED");
  slot_key(pkey, keys[0].data, (uint32_t)(0xFFFFFFFFu - (uint32_t)(seq + 1)));
  memcpy(pay, &lat, 8);
  memcpy(pay + 8, &lon, 8);
  memcpy(pay + 16, &id, 8);
  if ((rc = duet_put(t, pkey, 8, pay, 24)) != DUET_OK) return rc;
  seq += 1;
  memcpy(prof, &seq, 8);
  memcpy(prof + 8, &home, 8);
  if ((rc = duet_put(t, keys[0].data, 8, prof, 16)) != DUET_OK) return rc;
  return duet_reply_int(r, seq);
}

static const duet_procedure_def kProcedures[] = {
    {"olda_model", olda_model, 0},
    {"olda_pay", olda_pay, 0},
};

static const duet_library_def kLibrary = {DUET_PROCEDURE_ABI_VERSION, "olda", kProcedures,
                                          sizeof kProcedures / sizeof kProcedures[0]};

DUET_PROCEDURE_EXPORT const duet_library_def* duet_procedure_register(void) { return &kLibrary; }
