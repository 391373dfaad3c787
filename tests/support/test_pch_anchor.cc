// Compiled only so that kvindexer_test_pch has a source: the target exists
// to build the precompiled header the test executables share
// (cmake/KvindexerTestPch.cmake).
