// The translation unit that builds tests/test_pch.hpp's precompiled copy; it has no code.
