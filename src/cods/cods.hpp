// CODS: write a data structure once, run it on the CPU and the GPU.
//
// Include this one header. It brings the group abstraction (group.hpp), per-element atomics
// (atomic.hpp), and c-objects with their fragments in both atomicity regimes (cobject.hpp).
// See docs/architecture.md, "CODS", for the model.
#pragma once

#include "cods/atomic.hpp"
#include "cods/cobject.hpp"
#include "cods/group.hpp"
#include "cods/hd.hpp"
