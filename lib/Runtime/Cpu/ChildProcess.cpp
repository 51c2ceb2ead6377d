//===- ChildProcess.cpp ---------------------------------------------------===//
//
// vfork + execve rather than posix_spawn, which cannot ask for a parent-death
// signal. Between vfork and execve the child only makes system calls: it
// shares the parent's memory, and every signal stays blocked until its
// handlers are back to the defaults.
//
//===----------------------------------------------------------------------===//
#include "ChildProcess.h"

#include "enigma/Runtime/Backend.h"
#include "enigma/Support/ProcessLife.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace enigma::cpu {
namespace {
/// The executable `name` names: itself when it has a '/', else the first
/// match on PATH. Empty when there is none.
std::string findProgram(const std::string &name) {
  if (name.find('/') != std::string::npos)
    return name;
  const char *path = std::getenv("PATH");
  std::istringstream folders(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string folder; std::getline(folders, folder, ':');) {
    std::string candidate = (folder.empty() ? "." : folder) + "/" + name;
    struct stat st;
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return "";
}

void killGroup(pid_t pid) {
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL); // in case it had not made its group yet
}
} // namespace

ProcessResult runChildProcess(const std::vector<std::string> &argv) {
  ProcessResult result;
  std::string program = argv.empty() ? "" : findProgram(argv[0]);
  if (program.empty()) {
    result.output = std::strerror(ENOENT);
    return result;
  }
  std::vector<char *> args;
  for (const std::string &arg : argv)
    args.push_back(const_cast<char *>(arg.c_str()));
  args.push_back(nullptr);

  int pipeFds[2];
  // O_CLOEXEC: children started concurrently by other threads must not
  // inherit the write end, or we would never see end-of-file.
  if (::pipe2(pipeFds, O_CLOEXEC) != 0)
    throw RuntimeFailure(std::string("cannot create a pipe: ") +
                         std::strerror(errno));
  int devNull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);

  sigset_t all, previous;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  const pid_t parent = ::getpid();
  // The child shares this frame until execve: it leaves execve's error here.
  volatile int execError = 0;
  pid_t pid = ::vfork();
  if (pid == 0) {
    // The child: system calls only.
    struct sigaction defaults {};
    defaults.sa_handler = SIG_DFL;
    for (int signal = 1; signal < NSIG; ++signal)
      ::sigaction(signal, &defaults, nullptr);
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) // the parent died before the line above
      ::_exit(127);
    ::dup2(pipeFds[1], STDOUT_FILENO);
    ::dup2(pipeFds[1], STDERR_FILENO);
    if (devNull >= 0)
      ::dup2(devNull, STDIN_FILENO);
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);
    ::execve(program.c_str(), args.data(), environ);
    execError = errno;
    ::_exit(127);
  }
  int forkError = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  ::close(pipeFds[1]);
  if (devNull >= 0)
    ::close(devNull);
  if (pid < 0 || execError != 0) {
    ::close(pipeFds[0]);
    if (pid > 0)
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
    result.output = std::strerror(pid < 0 ? forkError : execError);
    return result;
  }
  result.started = true;

  bool interrupted = false;
  char buffer[4096];
  for (;;) {
    struct pollfd wait {pipeFds[0], POLLIN, 0};
    int ready = ::poll(&wait, 1, int(kInterruptPollInterval.count()));
    if (ready < 0 && errno != EINTR)
      break;
    if (ready > 0) {
      ssize_t got = ::read(pipeFds[0], buffer, sizeof buffer);
      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0)
        break;
      result.output.append(buffer, size_t(got));
      continue;
    }
    if (interruptRequested()) {
      interrupted = true;
      killGroup(pid);
      break;
    }
  }
  ::close(pipeFds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (interrupted)
    throw Interrupted("the compiler was stopped: " + argv[0]);
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

} // namespace enigma::cpu
