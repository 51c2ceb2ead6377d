//===- ArtifactCacheTest.cpp ----------------------------------------------===//
#include "enigma/Cache/ArtifactCache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using enigma::ArtifactCache;
using enigma::ScratchDirectory;

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
  EXPECT_FALSE(cache->lookup(key));

  cache->store(key, "hello bytes", ".bin");
  auto other = ArtifactCache::open(dir.path); // as a second process would
  std::optional<ArtifactCache::Object> found = other->lookup(key);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->bytes(), "hello bytes");
  EXPECT_EQ(fs::path(found->path()).extension(), ".bin");
  EXPECT_EQ(readAll(found->path()), "hello bytes");
  EXPECT_GE(found->fd(), 0);
  EXPECT_FALSE(other->lookup(ArtifactCache::makeKey({"other"})));
}

TEST(ArtifactCacheTest, StoreFileMovesTheProducedFile) {
  TempDir dir;
  auto cache = ArtifactCache::open(dir.path);
  ScratchDirectory scratch = cache->makeScratchDirectory();
  std::string produced = scratch.path() + "/out.so";
  std::ofstream(produced) << "object code";
  std::string key = ArtifactCache::makeKey({"moved"});
  ArtifactCache::Object stored = cache->storeFile(key, scratch, "out.so", ".so");
  EXPECT_FALSE(fs::exists(produced));
  EXPECT_EQ(stored.bytes(), "object code");
  EXPECT_EQ(readAll(stored.path()), "object code");
  ASSERT_TRUE(cache->lookup(key));
  EXPECT_EQ(cache->lookup(key)->path(), stored.path());
}

TEST(ArtifactCacheTest, CorruptedEntryIsDetectedAndDropped) {
  TempDir dir;
  auto cache = ArtifactCache::open(dir.path);
  std::string key = ArtifactCache::makeKey({"corrupt"});
  cache->store(key, std::string(4096, 'x'), ".so");
  std::string stored = cache->lookup(key)->path();

  fs::resize_file(stored, 100); // a truncated write
  EXPECT_FALSE(cache->lookup(key));
  EXPECT_FALSE(fs::exists(stored)) << "the damaged object must be deleted";

  // Rebuilt, then damaged in place without changing the size.
  cache->store(key, std::string(4096, 'x'), ".so");
  ASSERT_TRUE(cache->lookup(key));
  {
    std::fstream file(stored, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(2000);
    file.put('y');
  }
  EXPECT_FALSE(cache->lookup(key));

  // A damaged key record is a miss too.
  cache->store(key, "fine", ".so");
  std::ofstream(dir.path + "/v1/keys/" + key) << "garbage";
  EXPECT_FALSE(cache->lookup(key));
  cache->store(key, "fine again", ".so");
  ASSERT_TRUE(cache->lookup(key));
  EXPECT_EQ(cache->lookup(key)->bytes(), "fine again");
}

TEST(ArtifactCacheTest, DisabledCacheStoresNothing) {
  auto cache = ArtifactCache::disabled();
  EXPECT_FALSE(cache->enabled());
  std::string key = ArtifactCache::makeKey({"disabled"});
  cache->store(key, "data", ".bin");
  EXPECT_FALSE(cache->lookup(key));
  EXPECT_FALSE(cache->ensureFileSet({{"a.h", "int a;"}}));
  // Produced files stay where they are, and are handed back opened.
  ScratchDirectory scratch = cache->makeScratchDirectory();
  std::ofstream(scratch.path() + "/out.so") << "code";
  ArtifactCache::Object object = cache->storeFile(key, scratch, "out.so");
  EXPECT_EQ(object.bytes(), "code");
  EXPECT_EQ(object.path(), scratch.path() + "/out.so");
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
}

TEST(ArtifactCacheTest, RejectsKeysThatAreNotPlainNames) {
  TempDir dir;
  auto cache = ArtifactCache::open(dir.path);
  EXPECT_THROW(cache->lookup("../escape"), std::invalid_argument);
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
        if (std::optional<ArtifactCache::Object> object = cache->lookup(key)) {
          std::string content = object->bytes();
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

//===----------------------------------------------------------------------===//
// The cache as a trust boundary (docs/design/cache.md)
//===----------------------------------------------------------------------===//

namespace {
constexpr uid_t kOtherUser = 65534; // nobody

mode_t modeOf(const fs::path &path) {
  struct stat st;
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

/// Runs `body` with the umask set to `mask`.
template <typename Body> void withUmask(mode_t mask, Body body) {
  mode_t old = ::umask(mask);
  body();
  ::umask(old);
}

#define SKIP_UNLESS_ROOT()                                                     \
  if (::geteuid() != 0)                                                        \
  GTEST_SKIP() << "files of another user can only be made by root"
} // namespace

TEST(ArtifactCacheTrustTest, ModesDoNotDependOnTheUmask) {
  for (mode_t mask : {mode_t(0), mode_t(002), mode_t(077)}) {
    TempDir dir;
    std::string root = dir.path + "/cache";
    withUmask(mask, [&] {
      auto cache = ArtifactCache::open(root);
      ASSERT_TRUE(cache->enabled());
      cache->store(ArtifactCache::makeKey({"m"}), "bytes", ".bin");
      ASSERT_TRUE(cache->ensureFileSet({{"a.h", "int a;"}}));
      cache->writeNote("notes", "note", "text");
      ScratchDirectory scratch = cache->makeScratchDirectory();
      std::ofstream(scratch.path() + "/out.so") << "code";
      EXPECT_EQ(modeOf(scratch.path()), 0700u);
      cache->storeFile(ArtifactCache::makeKey({"f"}), scratch, "out.so", ".so");
    });
    for (const auto &entry : fs::recursive_directory_iterator(root)) {
      mode_t want = entry.is_directory() ? 0700 : 0600;
      if (entry.path().filename() == "lock") // a live scratch area's
        continue;
      EXPECT_EQ(modeOf(entry.path()), want)
          << entry.path() << " under umask " << std::oct << mask;
    }
    EXPECT_EQ(modeOf(root), 0700u);
  }
}

TEST(ArtifactCacheTrustTest, FolderAnyoneCanRenameIntoIsRefused) {
  // The parent can be written by every user and is not sticky: anyone
  // could put another folder in the cache's place.
  TempDir dir;
  fs::path open = fs::path(dir.path) / "open";
  fs::create_directory(open);
  ::chmod(open.c_str(), 0777);
  testing::internal::CaptureStderr();
  auto cache = ArtifactCache::open((open / "cache").string());
  std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(cache->enabled());
  EXPECT_NE(warnings.find("can be written by every user"), std::string::npos)
      << warnings;
  EXPECT_FALSE(fs::exists(open / "cache" / "v1"));
}

TEST(ArtifactCacheTrustTest, StickyTempFolderIsAFineParent) {
  TempDir dir;
  fs::path shared = fs::path(dir.path) / "tmp";
  fs::create_directory(shared);
  ::chmod(shared.c_str(), 01777);
  auto cache = ArtifactCache::open((shared / "enigma-cache").string());
  EXPECT_TRUE(cache->enabled());
}

TEST(ArtifactCacheTrustTest, CacheFolderWritableByOthersIsRefused) {
  TempDir dir;
  fs::path root = fs::path(dir.path) / "cache";
  fs::create_directory(root);
  ::chmod(root.c_str(), 0777);
  testing::internal::CaptureStderr();
  auto cache = ArtifactCache::open(root.string());
  testing::internal::GetCapturedStderr();
  EXPECT_FALSE(cache->enabled());
  EXPECT_FALSE(fs::exists(root / "v1"));
}

TEST(ArtifactCacheTrustTest, OwnFoldersWithWideModesAreMadePrivate) {
  TempDir dir;
  std::string root = dir.path + "/cache";
  ASSERT_TRUE(ArtifactCache::open(root)->enabled());
  fs::path objects = fs::path(root) / "v1" / "objects";
  ::chmod(objects.c_str(), 0777);
  std::string key = ArtifactCache::makeKey({"wide"});
  auto cache = ArtifactCache::open(root);
  ASSERT_TRUE(cache->enabled());
  EXPECT_EQ(modeOf(objects), 0700u);
  cache->store(key, "x", ".bin");
  std::string object = cache->lookup(key)->path();
  ::chmod(object.c_str(), 0666);
  ASSERT_TRUE(cache->lookup(key));
  EXPECT_EQ(modeOf(object), 0600u);
}

TEST(ArtifactCacheTrustTest, OwnLinkToOwnFolderIsFollowed) {
  TempDir dir;
  fs::path real = fs::path(dir.path) / "real";
  fs::create_directory(real);
  fs::create_directory_symlink(real, fs::path(dir.path) / "link");
  auto cache = ArtifactCache::open(dir.path + "/link");
  ASSERT_TRUE(cache->enabled());
  EXPECT_TRUE(fs::is_directory(real / "v1" / "objects"));
}

TEST(ArtifactCacheTrustTest, LinkOwnedByAnotherUserIsNotFollowed) {
  SKIP_UNLESS_ROOT();
  TempDir dir;
  fs::path theirs = fs::path(dir.path) / "theirs";
  fs::create_directory(theirs);
  ::chown(theirs.c_str(), kOtherUser, kOtherUser);
  fs::path link = fs::path(dir.path) / "cache";
  fs::create_directory_symlink(theirs, link);
  ::lchown(link.c_str(), kOtherUser, kOtherUser);
  testing::internal::CaptureStderr();
  auto cache = ArtifactCache::open(link.string());
  std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(cache->enabled());
  EXPECT_NE(warnings.find("is a link owned by uid 65534"), std::string::npos)
      << warnings;
  EXPECT_TRUE(fs::is_empty(theirs));
}

TEST(ArtifactCacheTrustTest, FolderOfAnotherUserIsRefused) {
  SKIP_UNLESS_ROOT();
  TempDir dir;
  fs::path theirs = fs::path(dir.path) / "cache";
  fs::create_directory(theirs);
  ::chmod(theirs.c_str(), 0700);
  ::chown(theirs.c_str(), kOtherUser, kOtherUser);
  testing::internal::CaptureStderr();
  auto cache = ArtifactCache::open(theirs.string());
  std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(cache->enabled());
  EXPECT_NE(warnings.find("owned by uid 65534"), std::string::npos) << warnings;
}

TEST(ArtifactCacheTrustTest, EntryOfAnotherUserIsRemovedNotReturned) {
  SKIP_UNLESS_ROOT();
  TempDir dir;
  auto cache = ArtifactCache::open(dir.path);
  std::string key = ArtifactCache::makeKey({"planted"});
  cache->store(key, "their code", ".so");
  std::string object = cache->lookup(key)->path();
  ::chown(object.c_str(), kOtherUser, kOtherUser);
  testing::internal::CaptureStderr();
  EXPECT_FALSE(cache->lookup(key));
  std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(fs::exists(object));
  EXPECT_FALSE(fs::exists(dir.path + "/v1/keys/" + key));
  EXPECT_NE(warnings.find("owned by uid 65534"), std::string::npos) << warnings;
}

TEST(ArtifactCacheTrustTest, ObjectsAreLinksNeverFollowed) {
  TempDir dir;
  auto cache = ArtifactCache::open(dir.path);
  std::string key = ArtifactCache::makeKey({"linked"});
  cache->store(key, "code", ".so");
  std::string object = cache->lookup(key)->path();
  fs::path elsewhere = fs::path(dir.path) / "elsewhere.so";
  std::ofstream(elsewhere) << "code";
  fs::remove(object);
  fs::create_symlink(elsewhere, object);
  EXPECT_FALSE(cache->lookup(key));
  EXPECT_TRUE(fs::exists(elsewhere));
}

TEST(ArtifactCacheTrustTest, ObjectsAreReadFromTheCheckedFile) {
  // Whatever happens to the path after the checks, the descriptor reads
  // the file that passed them.
  TempDir dir;
  auto cache = ArtifactCache::open(dir.path);
  std::string key = ArtifactCache::makeKey({"swap"});
  cache->store(key, "checked", ".so");
  std::optional<ArtifactCache::Object> object = cache->lookup(key);
  ASSERT_TRUE(object);
  fs::path swapped = fs::path(dir.path) / "swapped";
  std::ofstream(swapped) << "swapped in";
  fs::rename(swapped, object->path());
  char buffer[16] = {};
  ASSERT_EQ(::pread(object->fd(), buffer, sizeof buffer - 1, 0), 7);
  EXPECT_EQ(std::string(buffer), "checked");
}

TEST(ArtifactCacheTrustTest, EvictedEntriesAreGone) {
  TempDir dir;
  auto cache = ArtifactCache::open(dir.path);
  std::string a = ArtifactCache::makeKey({"a"}), b = ArtifactCache::makeKey({"b"});
  cache->store(a, "not a kernel", ".so");
  cache->store(b, "another", ".so");
  std::optional<ArtifactCache::Object> object = cache->lookup(a);
  ASSERT_TRUE(object);
  cache->evict(a, *object);
  EXPECT_FALSE(fs::exists(object->path()));
  EXPECT_FALSE(cache->lookup(a));
  std::string path = cache->lookup(b)->path();
  cache->evict(b);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(cache->lookup(b));
}

TEST(ArtifactCacheTrustTest, FileSetWithAnExtraFileIsReplaced) {
  TempDir dir;
  auto cache = ArtifactCache::open(dir.path);
  std::vector<ArtifactCache::NamedText> files = {{"prelude.h", "int p;"}};
  std::optional<std::string> where = cache->ensureFileSet(files);
  ASSERT_TRUE(where);
  std::ofstream(*where + "/stdint.h") << "#error planted";
  EXPECT_EQ(cache->ensureFileSet(files), where);
  EXPECT_FALSE(fs::exists(*where + "/stdint.h"));
  EXPECT_EQ(readAll(*where + "/prelude.h"), "int p;");
  // A link in place of a file is not the file either.
  fs::path outside = fs::path(dir.path) / "outside.h";
  std::ofstream(outside) << "int p;";
  fs::remove(*where + "/prelude.h");
  fs::create_symlink(outside, *where + "/prelude.h");
  EXPECT_EQ(cache->ensureFileSet(files), where);
  EXPECT_FALSE(fs::is_symlink(*where + "/prelude.h"));
  EXPECT_TRUE(fs::exists(outside));
}

TEST(ArtifactCacheTrustTest, CleanupNeverFollowsLinks) {
  TempDir dir;
  std::string root = dir.path + "/cache";
  ASSERT_TRUE(ArtifactCache::open(root)->enabled());
  fs::path precious = fs::path(dir.path) / "precious";
  fs::create_directories(precious / "sub");
  std::ofstream(precious / "sub" / "keep.txt") << "keep";
  auto twoDaysAgo = fs::file_time_type::clock::now() - std::chrono::hours(48);
  fs::last_write_time(precious / "sub" / "keep.txt", twoDaysAgo);
  fs::last_write_time(precious / "sub", twoDaysAgo);
  fs::last_write_time(precious, twoDaysAgo);
  fs::path tmp = fs::path(root) / "v1" / "tmp";
  // tmp/ itself a link to the user's files: replaced, never walked.
  fs::rename(tmp, fs::path(root) / "v1" / "tmp-was");
  fs::create_directory_symlink(precious, tmp);
  ASSERT_TRUE(ArtifactCache::open(root)->enabled());
  EXPECT_TRUE(fs::exists(precious / "sub" / "keep.txt"));
  EXPECT_TRUE(fs::is_directory(tmp) && !fs::is_symlink(tmp));
  // A day-old link inside tmp/: the link goes, what it points to stays.
  fs::create_directory_symlink(precious, tmp / "work-old");
  struct timespec times[2] = {{0, UTIME_OMIT}, {::time(nullptr) - 2 * 86400, 0}};
  ::utimensat(AT_FDCWD, (tmp / "work-old").c_str(), times, AT_SYMLINK_NOFOLLOW);
  ASSERT_TRUE(ArtifactCache::open(root)->enabled());
  EXPECT_FALSE(fs::is_symlink(tmp / "work-old"));
  EXPECT_TRUE(fs::exists(precious / "sub" / "keep.txt"));
}

TEST(ArtifactCacheTrustTest, ScratchRemovalNeverFollowsLinks) {
  TempDir dir;
  auto cache = ArtifactCache::open(dir.path + "/cache");
  fs::path precious = fs::path(dir.path) / "precious";
  fs::create_directory(precious);
  std::ofstream(precious / "keep.txt") << "keep";
  std::string where;
  {
    ScratchDirectory scratch = cache->makeScratchDirectory();
    where = scratch.path();
    fs::create_directory_symlink(precious, fs::path(where) / "link");
    std::ofstream(fs::path(where) / "out.o") << "x";
  }
  EXPECT_FALSE(fs::exists(where));
  EXPECT_TRUE(fs::exists(precious / "keep.txt"));
}

TEST(ArtifactCacheTrustTest, ScratchOfAProcessThatCouldNotCleanUpIsRemoved) {
  TempDir dir;
  std::string root = dir.path + "/cache";
  fs::path tmp = fs::path(root) / "v1" / "tmp";
  ASSERT_TRUE(ArtifactCache::open(root)->enabled());
  pid_t child = ::fork();
  if (child == 0) {
    // As after os._exit or a kill: no destructor, no exit handler runs.
    ScratchDirectory scratch = ArtifactCache::open(root)->makeScratchDirectory();
    std::ofstream(scratch.path() + "/big.pch") << std::string(1 << 16, 'x');
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  std::vector<fs::path> left;
  for (const auto &entry : fs::directory_iterator(tmp))
    left.push_back(entry.path());
  ASSERT_EQ(left.size(), 1u); // the child's area
  {
    auto cache = ArtifactCache::open(root);
    ScratchDirectory mine = cache->makeScratchDirectory();
    EXPECT_FALSE(fs::exists(left[0])) << "the dead process's area stayed";
  }
}

TEST(ArtifactCacheTrustTest, DisabledCacheScratchGoesToAPrivateTempFolder) {
  TempDir dir;
  ScopedEnv tmpdir("TMPDIR", dir.path.c_str());
  std::string where;
  {
    ScratchDirectory scratch = ArtifactCache::disabled()->makeScratchDirectory();
    where = scratch.path();
    EXPECT_EQ(where.rfind(dir.path + "/enigma-", 0), 0u) << where;
    EXPECT_EQ(modeOf(fs::path(where).parent_path()), 0700u);
    EXPECT_EQ(modeOf(where), 0700u);
  }
  EXPECT_FALSE(fs::exists(where));
}

TEST(ArtifactCacheTrustTest, NotesRoundTrip) {
  TempDir dir;
  auto cache = ArtifactCache::open(dir.path);
  EXPECT_FALSE(cache->readNote("notes", "flags"));
  cache->writeNote("notes", "flags", "-march=native\nend\n");
  EXPECT_EQ(cache->readNote("notes", "flags"), "-march=native\nend\n");
  EXPECT_EQ(modeOf(dir.path + "/notes/flags"), 0600u);
  EXPECT_THROW(cache->readNote("notes", "../x"), std::invalid_argument);
  EXPECT_THROW(cache->readNote("..", "x"), std::invalid_argument);
}

TEST(ArtifactCacheTrustTest, GroupSharedCache) {
  SKIP_UNLESS_ROOT();
  TempDir dir;
  std::string root = dir.path + "/cache";
  {
    ScopedEnv group("ENIGMA_CACHE_GROUP", "65534");
    withUmask(077, [&] {
      auto cache = ArtifactCache::open(root);
      ASSERT_TRUE(cache->enabled());
      cache->store(ArtifactCache::makeKey({"g"}), "shared", ".bin");
      // A member's entry (nobody's primary group is 65534) is trusted.
      std::string object = cache->lookup(ArtifactCache::makeKey({"g"}))->path();
      ::chown(object.c_str(), kOtherUser, 65534);
      EXPECT_TRUE(cache->lookup(ArtifactCache::makeKey({"g"})));
    });
    struct stat st;
    ASSERT_EQ(::stat((root + "/v1/keys").c_str(), &st), 0);
    EXPECT_EQ(st.st_gid, 65534u);
    EXPECT_EQ(st.st_mode & 07777, 02770u);
  }
  // Without the opt-in a folder the group can write is refused.
  testing::internal::CaptureStderr();
  EXPECT_FALSE(ArtifactCache::open(root)->enabled());
  std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_NE(warnings.find("ENIGMA_CACHE_GROUP"), std::string::npos) << warnings;
}
