// Compile-time check of the B-link tree's K range (ctest CodsTreeK48CompileCheck and
// CodsTreeK49CompileCheck, tests/CMakeLists.txt): compiled with -fsyntax-only for
// DUET_TREE_K = 48, which must compile, and 49, which must fail on TreeShape's static_assert.
// A node's meta word holds the presence bitset in bits 0..K-1 and the level at bits 48..55, so
// K = 49..60 used to compile and then crash at run time.
#include "index/cods/blink_tree.hpp"

static_assert(sizeof(duet::cods::ds::BLinkTree<DUET_TREE_K, duet::cods::CpuThread,
                                               duet::cods::ds::Regime::kElementwise>::Node) > 0);
