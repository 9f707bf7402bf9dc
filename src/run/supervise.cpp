// The main loop of `clock run`: wait for the child while forwarding signals,
// watch the lease deadline and the runtime limit, apply --on-lease-lost and
// --max-runtime to the whole job, end or await what the command leaves
// running (--leftovers), reap orphans, and turn the end into an exit status.
#include "run/supervise.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <optional>
#include <poll.h>
#include <string>
#include <sys/wait.h>

#include <spdlog/spdlog.h>

#include "error.hpp"
#include "run/guard.hpp"
#include "run/heartbeat.hpp"
#include "run/job_tree.hpp"
#include "run/signals.hpp"
#include "run/spawn.hpp"
#include "run/terminal.hpp"
#include "util/duration.hpp"
#include "util/process_group.hpp"

namespace clk::run {

namespace {

using Clock = std::chrono::steady_clock;
using util::format_duration;
using namespace std::chrono_literals;

// How often the job is looked at once the command itself is reaped while it
// is being stopped: a process may fork as it is killed.
constexpr milliseconds k_group_poll = 20ms;
// How often it is looked at while leftovers are awaited (--leftovers wait).
// Only a safety net: the job's last process is clock's child (clock is its
// subreaper), so its exit wakes clock with SIGCHLD.
constexpr milliseconds k_leftovers_poll = 1s;
// The most leftovers recorded (on the lease, in history): enough to name
// what a job leaves, bounded against a fork bomb.
constexpr std::size_t k_leftovers_recorded = 64;

// Why the job is being stopped, if it is.
enum class Stopping { no, out_of_time, lease_lost, leftovers };

// The signals that ask clock (and so the job) to end: the job's leftovers are
// ended too, whatever --leftovers says.
bool asks_to_stop(int signo) {
  return signo == SIGINT || signo == SIGTERM || signo == SIGHUP || signo == SIGQUIT;
}

struct Ending {
  int status;        // what clock exits with
  bool out_of_time;  // --max-runtime stopped the command (and the lease was not lost meanwhile)
  bool lease_lost;   // the command was stopped because the lease was lost
  std::vector<lock::Leftover> leftovers;  // what the command left, and what became of it
  int wait_status;                        // the command's own, as waitpid gave it
};

std::string signal_name(int signo) {
  const char* abbrev = sigabbrev_np(signo);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(signo);
}

// One supervised child, from spawn to reaping.
class Supervision {
 public:
  // `started`: when the command was started, on the steady clock.
  Supervision(const RunOptions& options, pid_t child, pid_t group, const JobTree& tree,
              SignalRelay& relay, Heartbeat* heartbeat, TerminalHandover& terminal,
              Clock::time_point started)
      : m_options(options),
        m_child(child),
        m_group(group),
        m_tree(tree),
        m_relay(relay),
        m_heartbeat(heartbeat),
        m_terminal(terminal) {
    if (options.max_runtime > milliseconds::zero())
      m_out_of_time_at = started + options.max_runtime;
  }

  // Runs until the child is reaped and the rest of the job is gone too.
  Ending run() {
    std::optional<int> child_status;
    for (;;) {
      if (!child_status) {
        child_status = reap();
        m_command_done = child_status.has_value();
      }
      auto roots = m_tree.reap_orphans(m_command_done ? -1 : m_child);
      if (child_status && job_done(*child_status, roots))
        return {finish(*child_status), m_stopping == Stopping::out_of_time,
                m_stopping == Stopping::lease_lost, m_leftovers, *child_status};
      Clock::time_point now = Clock::now();
      start_heartbeat_when_due(now);
      check_lease(now);
      check_runtime(now);
      escalate(now);
      pollfd fds[2] = {{m_relay.fd(), POLLIN, 0},
                       {m_heartbeat ? m_heartbeat->fd() : -1, POLLIN, 0}};
      // EINTR: just go round again
      poll(fds, 2, poll_timeout(Clock::now(), child_status.has_value()));
      if (m_heartbeat)
        m_heartbeat->clear_news();
      forward_signals();
    }
  }

 private:
  // The child's wait status once it has exited; a stop is handled here.
  std::optional<int> reap() {
    int wait_status = 0;
    pid_t pid = waitpid(m_child, &wait_status, WNOHANG | WUNTRACED);
    if (pid < 0 && errno == EINTR)
      return std::nullopt;
    if (pid < 0) {
      throw Error(ExitCode::internal,
                  "lost track of the command's process: waitpid: " + std::string(strerror(errno)));
    }
    if (pid == 0)
      return std::nullopt;
    if (!WIFSTOPPED(wait_status))
      return wait_status;
    if (m_kill_at) {
      signal_job(SIGCONT);  // a stopped child would never see the SIGTERM
    } else {
      m_terminal.suspend_with_child(m_group, WSTOPSIG(wait_status));
    }
    return std::nullopt;
  }

  int finish(int wait_status) {
    if (m_stopping == Stopping::no || m_stopping == Stopping::leftovers)
      return exit_status_of(wait_status);
    if (m_stopping == Stopping::out_of_time)
      return report_out_of_time();
    // The lease is gone: nothing of the command's group may outlive the child.
    signal_group(SIGKILL);
    return exit_status(ExitCode::lease_lost);
  }

  void start_heartbeat_when_due(Clock::time_point now) {
    if (!m_heartbeat)
      return;
    if (auto due = m_heartbeat->start_due(); due && now >= *due)
      m_heartbeat->start();
  }

  std::string lease() const {
    return m_options.lease_name.empty() ? "the lease" : "the lease on " + m_options.lease_name;
  }

  void check_lease(Clock::time_point now) {
    if (!m_heartbeat || m_stopping == Stopping::lease_lost)
      return;
    bool lost = m_heartbeat->lost();
    Clock::time_point last = m_heartbeat->last_renewal_start();
    if (!lost && now < lease_deadline(last, m_options.ttl, m_options.kill_after)) {
      m_warned = false;  // renewed in time again: the heartbeat has said so
      return;
    }
    std::string why =
        lost ? lease() + " was lost: it expired, was released by force, or is another owner's"
             : lease() + " was not renewed in time (the last renewal started " +
                   format_duration(std::chrono::duration_cast<milliseconds>(now - last)) +
                   " ago; is the database reachable, or was clock paused?)";
    if (m_options.on_lease_lost == LeaseLostPolicy::kill) {
      stop_child(why, now);
    } else if (!m_warned) {
      spdlog::warn("{}; the command keeps running (--on-lease-lost warn), unprotected by the lock",
                   why);
      m_warned = true;
    }
  }

  void stop_child(const std::string& why, Clock::time_point now) {
    spdlog::error("{}; stopping the command: SIGTERM to all its processes now, SIGKILL after {}",
                  why, format_duration(m_options.kill_after));
    m_stopping = Stopping::lease_lost;
    terminate_group(now);
    m_heartbeat->request_stop();
  }

  // --max-runtime: the limit counts from the command's start on the local
  // monotonic clock, and covers the leftovers awaited after it. The heartbeat
  // goes on renewing while the job stops, so the lock covers the command
  // until the last of its processes is gone.
  void check_runtime(Clock::time_point now) {
    if (!m_out_of_time_at || m_stopping != Stopping::no || now < *m_out_of_time_at)
      return;
    spdlog::info(
        "the command ran for --max-runtime {}; stopping it: SIGTERM to all its processes now, "
        "SIGKILL after {}",
        format_duration(m_options.max_runtime), format_duration(m_options.kill_after));
    m_stopping = Stopping::out_of_time;
    terminate_group(now);
  }

  // SIGTERM now, SIGKILL --kill-after later, as timeout(1) does, to the
  // command's group and every other process of the job. A second reason to
  // stop (the lease lost while out of time) keeps the earlier SIGKILL.
  void terminate_group(Clock::time_point now) {
    signal_job(SIGTERM);
    signal_job(SIGCONT);  // as timeout(1) does: a stopped child must see the SIGTERM
    Clock::time_point kill_at = now + m_options.kill_after;
    if (!m_kill_at || kill_at < *m_kill_at)
      m_kill_at = kill_at;
  }

  void escalate(Clock::time_point now) {
    if (!m_kill_at || m_killed || now < *m_kill_at)
      return;
    // Out of time, the closing error line tells of the SIGKILL.
    spdlog::log(m_stopping == Stopping::lease_lost ? spdlog::level::warn : spdlog::level::info,
                "the command did not exit within {} of SIGTERM; sending SIGKILL",
                format_duration(m_options.kill_after));
    signal_job(SIGKILL);
    m_killed = true;
  }

  // Once the command is reaped: whether the rest of the job is gone too. The
  // first time it is not, decides what becomes of it: ended (lease lost,
  // --leftovers kill, clock asked to stop) or awaited (--leftovers wait);
  // either way the lease covers it until it is gone.
  // `roots`: what reap_orphans() left, the processes at the top of the rest.
  bool job_done(int command_status, const std::optional<std::vector<pid_t>>& roots) {
    if (!roots)
      return !awaiting_group();  // /proc is not ours: the command's group is all we know
    track_leftovers(*roots);
    auto left = m_tree.with_descendants(*roots);
    if (left.empty())
      return true;
    if (m_killed) {
      signal_job(SIGKILL);  // what forked since the last round
    } else if (!m_leftovers_seen) {
      m_leftovers_seen = true;
      leftovers_found(left, command_status);
    }
    return false;
  }

  // What the command left and what became of each (the release records it
  // in history): the processes at the top of what is left (`roots`, clock's
  // children once the command is reaped; what they fork is theirs and not
  // named), and each root that appears later as its parent exits. A process
  // gone since the last look exited by itself if clock was awaiting it,
  // else clock ended it. While they are awaited, the list is recorded on the
  // lease too, for `clock status`.
  void track_leftovers(const std::vector<pid_t>& left) {
    bool changed = false;
    auto running = [](const lock::Leftover& leftover) {
      return leftover.fate == lock::LeftoverFate::running;
    };
    for (auto& leftover : m_leftovers) {
      if (running(leftover) && std::find(left.begin(), left.end(), leftover.pid) == left.end()) {
        leftover.fate =
            m_stopping == Stopping::no ? lock::LeftoverFate::waited : lock::LeftoverFate::ended;
        changed = true;
      }
    }
    for (pid_t pid : left) {
      if (m_leftovers.size() >= k_leftovers_recorded)
        break;
      bool known = std::any_of(m_leftovers.begin(), m_leftovers.end(), [&](const auto& leftover) {
        return running(leftover) && leftover.pid == pid;
      });
      if (!known) {
        m_leftovers.push_back({pid, JobTree::command_of(pid), lock::LeftoverFate::running});
        changed = true;
      }
    }
    bool awaited = m_options.leftovers == Leftovers::wait && m_stopping == Stopping::no &&
                   !m_asked_to_stop && !left.empty();
    if (changed && awaited && m_heartbeat) {
      m_heartbeat->start();  // a short job's heartbeat may not have started yet
      m_heartbeat->note_leftovers(m_leftovers);
    }
  }

  void leftovers_found(const std::vector<pid_t>& left, int command_status) {
    if (m_stopping == Stopping::lease_lost) {
      signal_job(SIGKILL);  // the lease is gone: nothing of the job may outlive the command
      m_killed = true;
      return;
    }
    if (m_stopping != Stopping::no)
      return;  // being stopped already
    std::string what = fmt::format("the command exited ({}) but left {} process{} running: {}",
                                   exit_status_of(command_status), left.size(),
                                   left.size() == 1 ? "" : "es", JobTree::describe(left));
    if (m_options.leftovers == Leftovers::wait && !m_asked_to_stop) {
      spdlog::info("{}; the lock stays held until they exit (--leftovers wait)", what);
      return;
    }
    spdlog::warn("{}; ending {} before the release: SIGTERM now, SIGKILL after {}{}", what,
                 left.size() == 1 ? "it" : "them", format_duration(m_options.kill_after),
                 m_asked_to_stop ? "" : " (--leftovers wait would keep the lock until they exit)");
    m_stopping = Stopping::leftovers;
    terminate_group(Clock::now());
  }

  // Out of time, the command is reaped but its group may live on in
  // grandchildren; the lease covers them until they are gone.
  bool awaiting_group() const { return m_stopping == Stopping::out_of_time && !group_gone(); }

  bool group_gone() const {
    // The guard leads the group and stays until clock stands it down.
    if (auto members = util::process_group_has_members(m_group, m_group))
      return !*members;
    return m_killed;  // without /proc, only SIGKILL makes sure of it
  }

  // The one line an operator sees (cron mails it).
  int report_out_of_time() const {
    std::string how = m_killed ? "SIGKILL, as its processes outlived SIGTERM by --kill-after " +
                                     format_duration(m_options.kill_after)
                               : "SIGTERM to all its processes";
    spdlog::error("the command ran out of time (--max-runtime {}) and was stopped by {}",
                  format_duration(m_options.max_runtime), how);
    return exit_status(ExitCode::out_of_time);
  }

  // Milliseconds until the next thing the loop must do by itself; -1: none.
  // `child_reaped`: only the rest of the command's group is awaited.
  int poll_timeout(Clock::time_point now, bool child_reaped) const {
    std::optional<Clock::time_point> wake;
    auto wake_by = [&wake](Clock::time_point when) {
      if (!wake || when < *wake)
        wake = when;
    };
    if (m_kill_at && !m_killed)
      wake_by(*m_kill_at);
    if (auto due = m_heartbeat ? m_heartbeat->start_due() : std::nullopt)
      wake_by(*due);
    if (m_out_of_time_at && m_stopping == Stopping::no)
      wake_by(*m_out_of_time_at);
    if (m_heartbeat && !m_warned && m_stopping != Stopping::lease_lost)
      wake_by(
          lease_deadline(m_heartbeat->last_renewal_start(), m_options.ttl, m_options.kill_after));
    if (child_reaped)
      wake_by(now + (m_stopping == Stopping::no ? k_leftovers_poll : k_group_poll));
    if (!wake)
      return -1;
    auto left = std::chrono::ceil<milliseconds>(*wake - now).count();
    return static_cast<int>(std::clamp<decltype(left)>(left, 0, INT_MAX));
  }

  // To the command's group while the command runs (the command decides what
  // its children hear); once it has exited, to every process it left. A
  // signal that asks clock to stop also ends the leftovers when the command
  // exits, whatever --leftovers says.
  void forward_signals() {
    for (int signo : m_relay.drain()) {
      if (signo == SIGCHLD)
        continue;  // reap() and reap_orphans() look every time round
      if (!m_command_done) {
        spdlog::debug("forwarding {} to the command's process group", signal_name(signo));
        signal_group(signo);
      } else {
        spdlog::debug("forwarding {} to the processes the command left", signal_name(signo));
        m_tree.signal_all(signo);
      }
      if (!asks_to_stop(signo))
        continue;
      m_asked_to_stop = true;
      if (m_command_done && m_stopping == Stopping::no) {
        m_stopping = Stopping::leftovers;
        terminate_group(Clock::now());
      }
    }
  }

  void signal_group(int signo) { kill(-m_group, signo); }

  // The command's group (it may hold processes clock cannot list) and every
  // other process of the job: once each, so that a trap runs once.
  void signal_job(int signo) {
    signal_group(signo);
    m_tree.signal_all(signo, m_group);
  }

  const RunOptions& m_options;
  const pid_t m_child;
  const pid_t m_group;
  const JobTree& m_tree;
  SignalRelay& m_relay;
  Heartbeat* m_heartbeat;  // null with --ttl 0: no renewals, no deadline
  TerminalHandover& m_terminal;
  bool m_warned = false;                              // --on-lease-lost warn has said so
  std::optional<Clock::time_point> m_out_of_time_at;  // --max-runtime's end; none: no limit
  Stopping m_stopping = Stopping::no;
  std::optional<Clock::time_point> m_kill_at;  // set once the child is being stopped
  bool m_killed = false;                       // SIGKILL sent
  bool m_command_done = false;                 // the command itself is reaped
  bool m_leftovers_seen = false;               // leftovers_found() has decided
  bool m_asked_to_stop = false;                // a forwarded signal asked the job to end
  std::vector<lock::Leftover> m_leftovers;     // what the command left (track_leftovers)
};

}  // namespace

int supervise(const RunOptions& options, const Renew& renew, Clock::time_point first_renewal_start,
              const AfterChild& after_child) {
  check_timing(options);
  Guard guard;
  LeaseKeeping lease;
  lease.renew = renew;
  return supervise(options, guard, lease, first_renewal_start, after_child);
}

int supervise(const RunOptions& options, Guard& guard, const LeaseKeeping& lease,
              Clock::time_point first_renewal_start, const AfterChild& after_child) {
  check_timing(options);
  Command command(options.argv, options.extra_env);
  // Before the command starts: what it leaves behind is re-parented to clock.
  if (!become_subreaper())
    spdlog::debug("cannot become the child subreaper: {}", strerror(errno));
  JobTree tree(guard.process_group(), guard.cgroup());
  SignalRelay relay;
  TerminalHandover terminal;
  Spawned spawned;
  {
    // The fork before any thread; no handler runs in the child before exec.
    BlockedSignals blocked;
    const JobCgroup* cgroup = guard.cgroup();
    spawned = spawn(command, {guard.process_group(), terminal.active(), &relay, &blocked.previous(),
                              cgroup ? cgroup->dir_fd() : -1, cgroup ? cgroup->procs_fd() : -1});
  }
  Clock::time_point started = Clock::now();
  pid_t group = guard.process_group();
  terminal.give_to(group);  // the child took it already; this records it
  if (spawned.pid < 0) {
    guard.stand_down();
    // Never started: its status (126, 127) stands for an exit code.
    RunEnd end{spawned.status, false, first_renewal_start, {}, W_EXITCODE(spawned.status, 0)};
    return after_child ? after_child(end) : end.status;
  }

  if (options.beside_command)
    options.beside_command();
  // Never leave the command running without renewals: when the heartbeat
  // cannot be set up, or its thread (started inside the loop) cannot start.
  auto stop_command = [&] {
    kill(-group, SIGKILL);
    tree.signal_all(SIGKILL);
    while (waitpid(spawned.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  };
  std::optional<Heartbeat> heartbeat;
  try {
    if (options.ttl > milliseconds::zero())
      heartbeat.emplace(options, lease, first_renewal_start);
  } catch (...) {
    stop_command();
    throw;
  }
  Supervision supervision(options, spawned.pid, group, tree, relay,
                          heartbeat ? &*heartbeat : nullptr, terminal, started);
  Ending ending{};
  try {
    ending = supervision.run();
  } catch (...) {
    stop_command();
    throw;
  }
  RunEnd end{ending.status, ending.lease_lost, first_renewal_start, std::move(ending.leftovers),
             ending.wait_status};
  const bool out_of_time = ending.out_of_time;
  if (heartbeat) {
    heartbeat->stop();
    end.last_held = heartbeat->last_held();
  }
  heartbeat.reset();
  terminal.take_back();
  // The guard is told first and reaped last (its destructor): it exits while
  // the release makes its round trip.
  guard.stand_down();
  if (out_of_time && options.on_out_of_time)
    options.on_out_of_time();
  return after_child ? after_child(end) : end.status;
}

}  // namespace clk::run
