//===- ArtifactCacheTest.cpp ----------------------------------------------===//
#include "enigma/Cache/ArtifactCache.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;
using enigma::ArtifactCache;

namespace {
/// A fresh directory removed at the end of the test.
class TempDir {
public:
  TempDir() {
    std::string pattern =
        (fs::temp_directory_path() / "enigma-cache-test-XXXXXX").string();
    path = ::mkdtemp(pattern.data()) ? pattern : "";
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  std::string path;
};

/// Sets an environment variable for one scope, restoring the old value.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name(name) {
    if (const char *old = std::getenv(name))
      previous = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (previous)
      ::setenv(name, previous->c_str(), 1);
    else
      ::unsetenv(name);
  }

private:
  const char *name;
  std::optional<std::string> previous;
};

std::string readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}
} // namespace

TEST(ArtifactCacheTest, HashesMatchKnownSha256) {
  EXPECT_EQ(ArtifactCache::contentHash(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(ArtifactCache::contentHash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(ArtifactCache::contentHash(std::string(1000, 'a')),
            "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
  std::string bytes;
  for (int repeat = 0; repeat < 300; ++repeat)
    for (int b = 0; b < 256; ++b)
      bytes += char(b);
  EXPECT_EQ(ArtifactCache::contentHash(bytes),
            "f8b0585eb91f58c007a5634362c9f90d8543822c113f702523bc7b73408a9392");
}

TEST(ArtifactCacheTest, KeysSeparateTheirParts) {
  std::string key = ArtifactCache::makeKey({"ab", "c"});
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ(key, ArtifactCache::makeKey({"ab", "c"}));
  EXPECT_NE(key, ArtifactCache::makeKey({"a", "bc"}));
  EXPECT_NE(key, ArtifactCache::makeKey({"abc"}));
}

TEST(ArtifactCacheTest, StoreThenLookupAcrossInstances) {
  TempDir dir;
  auto cache = ArtifactCache::open(dir.path);
  ASSERT_TRUE(cache->enabled());
  std::string key = ArtifactCache::makeKey({"test", "entry"});
  EXPECT_FALSE(cache->lookupPath(key));

  std::string stored = cache->store(key, "hello bytes", ".bin");
  EXPECT_EQ(readAll(stored), "hello bytes");
  EXPECT_EQ(fs::path(stored).extension(), ".bin");

  auto other = ArtifactCache::open(dir.path); // as a second process would
  std::optional<std::string> found = other->lookupPath(key);
  ASSERT_TRUE(found);
  EXPECT_EQ(*found, stored);
  EXPECT_FALSE(other->lookupPath(ArtifactCache::makeKey({"other"})));
}

TEST(ArtifactCacheTest, StoreFileMovesTheProducedFile) {
  TempDir dir;
  auto cache = ArtifactCache::open(dir.path);
  std::string scratch = cache->makeScratchDirectory();
  std::string produced = scratch + "/out.so";
  std::ofstream(produced) << "object code";
  std::string key = ArtifactCache::makeKey({"moved"});
  std::string stored = cache->storeFile(key, produced, ".so");
  EXPECT_FALSE(fs::exists(produced));
  EXPECT_EQ(readAll(stored), "object code");
  EXPECT_EQ(cache->lookupPath(key), stored);
  fs::remove_all(scratch);
}

TEST(ArtifactCacheTest, CorruptedEntryIsDetectedAndDropped) {
  TempDir dir;
  auto cache = ArtifactCache::open(dir.path);
  std::string key = ArtifactCache::makeKey({"corrupt"});
  std::string stored = cache->store(key, std::string(4096, 'x'), ".so");

  fs::resize_file(stored, 100); // a truncated write
  EXPECT_FALSE(cache->lookupPath(key));
  EXPECT_FALSE(fs::exists(stored)) << "the damaged object must be deleted";

  // Rebuilt, then damaged in place without changing the size.
  stored = cache->store(key, std::string(4096, 'x'), ".so");
  ASSERT_EQ(cache->lookupPath(key), stored);
  {
    std::fstream file(stored, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(2000);
    file.put('y');
  }
  EXPECT_FALSE(cache->lookupPath(key));

  // A damaged key record is a miss too.
  stored = cache->store(key, "fine", ".so");
  std::ofstream(dir.path + "/v1/keys/" + key) << "garbage";
  EXPECT_FALSE(cache->lookupPath(key));
  cache->store(key, "fine again", ".so");
  ASSERT_TRUE(cache->lookupPath(key));
  EXPECT_EQ(readAll(*cache->lookupPath(key)), "fine again");
}

TEST(ArtifactCacheTest, DisabledCacheStoresNothing) {
  auto cache = ArtifactCache::disabled();
  EXPECT_FALSE(cache->enabled());
  std::string key = ArtifactCache::makeKey({"disabled"});
  std::string path = cache->store(key, "data", ".bin");
  EXPECT_EQ(readAll(path), "data"); // still usable by the caller
  EXPECT_FALSE(cache->lookupPath(key));
  EXPECT_FALSE(cache->ensureFileSet({{"a.h", "int a;"}}));
  fs::remove_all(fs::path(path).parent_path());
}

TEST(ArtifactCacheTest, EnvironmentChoosesTheDirectory) {
  TempDir dir;
  {
    ScopedEnv disable("ENIGMA_DISABLE_CACHE", "1");
    ScopedEnv where("ENIGMA_CACHE_DIR", dir.path.c_str());
    EXPECT_FALSE(ArtifactCache::fromEnvironment()->enabled());
  }
  {
    ScopedEnv disable("ENIGMA_DISABLE_CACHE", "0");
    ScopedEnv where("ENIGMA_CACHE_DIR", dir.path.c_str());
    auto cache = ArtifactCache::fromEnvironment();
    EXPECT_TRUE(cache->enabled());
    EXPECT_EQ(cache->directory(), dir.path);
  }
  {
    ScopedEnv where("ENIGMA_CACHE_DIR", nullptr);
    ScopedEnv xdg("XDG_CACHE_HOME", "/some/xdg");
    EXPECT_EQ(ArtifactCache::defaultDirectory(), "/some/xdg/enigma");
  }
  {
    ScopedEnv where("ENIGMA_CACHE_DIR", nullptr);
    ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
    ScopedEnv home("HOME", "/home/someone");
    EXPECT_EQ(ArtifactCache::defaultDirectory(), "/home/someone/.cache/enigma");
  }
}

TEST(ArtifactCacheTest, UnwritableDirectoryDegradesWithOneWarning) {
  // A path below a regular file can never be created, even by root (who
  // ignores permission bits, so chmod would not test anything).
  TempDir dir;
  std::string blocker = dir.path + "/not-a-directory";
  std::ofstream(blocker) << "x";
  std::string impossible = blocker + "/cache";

  testing::internal::CaptureStderr();
  auto cache = ArtifactCache::open(impossible);
  auto again = ArtifactCache::open(impossible);
  std::string warnings = testing::internal::GetCapturedStderr();

  EXPECT_FALSE(cache->enabled());
  EXPECT_FALSE(again->enabled());
  EXPECT_NE(warnings.find(impossible), std::string::npos) << warnings;
  EXPECT_EQ(warnings.find("warning"), warnings.rfind("warning"))
      << "expected exactly one warning:\n" << warnings;
  // It still works as a disabled cache.
  std::string path = cache->store(ArtifactCache::makeKey({"k"}), "v");
  EXPECT_EQ(readAll(path), "v");
  fs::remove_all(fs::path(path).parent_path());
}

TEST(ArtifactCacheTest, RejectsKeysThatAreNotPlainNames) {
  TempDir dir;
  auto cache = ArtifactCache::open(dir.path);
  EXPECT_THROW(cache->lookupPath("../escape"), std::invalid_argument);
  EXPECT_THROW(cache->store("a/b", "x"), std::invalid_argument);
  EXPECT_THROW(cache->store("ok", "x", "/bad"), std::invalid_argument);
}

TEST(ArtifactCacheTest, FileSetsAreSharedAndRepaired) {
  TempDir dir;
  auto cache = ArtifactCache::open(dir.path);
  std::vector<ArtifactCache::NamedText> files = {{"one.h", "int one;"},
                                                 {"two.h", "int two;"}};
  std::optional<std::string> where = cache->ensureFileSet(files);
  ASSERT_TRUE(where);
  EXPECT_EQ(readAll(*where + "/one.h"), "int one;");
  EXPECT_EQ(readAll(*where + "/two.h"), "int two;");
  EXPECT_EQ(cache->ensureFileSet(files), where);

  std::ofstream(*where + "/two.h") << "damaged";
  EXPECT_EQ(cache->ensureFileSet(files), where);
  EXPECT_EQ(readAll(*where + "/two.h"), "int two;");

  std::vector<ArtifactCache::NamedText> changed = {{"one.h", "int uno;"}};
  EXPECT_NE(cache->ensureFileSet(changed), where);
}

// Found on a 16-core machine: a process that found the set missing deleted
// the one another process had just completed, so a third could not create
// it. Every racer must end up with the whole set, and no warning.
TEST(ArtifactCacheTest, ConcurrentFileSetCreationAlwaysSucceeds) {
  TempDir dir;
  for (int round = 0; round < 20; ++round) {
    // NamedText views its text: keep the strings alive.
    const std::string a = "int a" + std::to_string(round) + ";";
    const std::string b(20000, char('a' + round % 26));
    std::vector<ArtifactCache::NamedText> files = {{"a.h", a}, {"b.h", b}};
    std::vector<std::optional<std::string>> results(16);
    std::vector<std::thread> racers;
    for (size_t i = 0; i < results.size(); ++i)
      racers.emplace_back([&, i] {
        results[i] = ArtifactCache::open(dir.path)->ensureFileSet(files);
      });
    for (std::thread &racer : racers)
      racer.join();
    for (const std::optional<std::string> &where : results) {
      ASSERT_TRUE(where) << "round " << round;
      EXPECT_EQ(readAll(*where + "/a.h"), a);
      EXPECT_EQ(readAll(*where + "/b.h"), b);
    }
  }
}

TEST(ArtifactCacheTest, ConcurrentWritersAndReadersSeeWholeEntries) {
  TempDir dir;
  std::string key = ArtifactCache::makeKey({"contended"});
  auto contentFor = [](int writer) {
    return std::string(10000 + writer * 100, char('a' + writer));
  };
  constexpr int kThreads = 6;
  std::vector<std::thread> threads;
  std::atomic<int> badReads{0}, goodReads{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      auto cache = ArtifactCache::open(dir.path);
      for (int round = 0; round < 40; ++round) {
        cache->store(key, contentFor(t), ".bin");
        if (std::optional<std::string> path = cache->lookupPath(key)) {
          std::string content = readAll(*path);
          bool valid = false;
          for (int w = 0; w < kThreads; ++w)
            valid |= content == contentFor(w);
          (valid ? goodReads : badReads)++;
        }
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(badReads, 0);
  EXPECT_GT(goodReads, 0);
}

TEST(ArtifactCacheTest, OpeningRemovesTemporariesLeftByCrashes) {
  TempDir dir;
  ASSERT_TRUE(ArtifactCache::open(dir.path)->enabled());
  fs::path tmp = fs::path(dir.path) / "v1" / "tmp";
  // A crashed writer's file and scratch directory, two days old, and a
  // live writer's fresh file.
  std::ofstream(tmp / "file-stale") << "half";
  fs::create_directories(tmp / "work-stale" / "nested");
  std::ofstream(tmp / "file-live") << "busy";
  auto twoDaysAgo = fs::file_time_type::clock::now() - std::chrono::hours(48);
  fs::last_write_time(tmp / "file-stale", twoDaysAgo);
  fs::last_write_time(tmp / "work-stale", twoDaysAgo);

  ASSERT_TRUE(ArtifactCache::open(dir.path)->enabled());
  EXPECT_FALSE(fs::exists(tmp / "file-stale"));
  EXPECT_FALSE(fs::exists(tmp / "work-stale"));
  EXPECT_TRUE(fs::exists(tmp / "file-live"));
}
