//! Running two pieces of work at once, the second on a thread of its own.

use std::thread;

/// Runs `here` on the calling thread and `there` on a new thread at the same time,
/// and returns both results. A panic in `there` is raised again here.
///
/// The new thread asks to run on any CPU but the caller's. Left to itself, a
/// scheduler that sees the other CPUs as busy or asleep (common in virtual
/// machines, which report an idle virtual CPU as preempted) starts the thread
/// beside its parent and moves it only at the next load balance, several
/// milliseconds later: as long as the whole job.
pub(crate) fn beside<A, B>(here: impl FnOnce() -> A, there: impl FnOnce() -> B + Send) -> (A, B)
where
    B: Send,
{
    let caller = current_cpu();
    thread::scope(|scope| {
        let other = scope.spawn(move || {
            if let Some(cpu) = caller {
                avoid_cpu(cpu);
            }
            there()
        });
        let mine = here();
        match other.join() {
            Ok(theirs) => (mine, theirs),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

#[cfg(target_os = "linux")]
fn current_cpu() -> Option<usize> {
    nix::sched::sched_getcpu().ok()
}

#[cfg(not(target_os = "linux"))]
fn current_cpu() -> Option<usize> {
    None
}

/// Restricts the calling thread to the CPUs it may use now except `cpu`, if that
/// leaves any.
#[cfg(target_os = "linux")]
fn avoid_cpu(cpu: usize) {
    use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
    use nix::unistd::Pid;

    let this_thread = Pid::from_raw(0);
    let Ok(mut allowed) = sched_getaffinity(this_thread) else {
        return;
    };
    if allowed.unset(cpu).is_err() {
        return;
    }
    let others = (0..CpuSet::count()).any(|other| allowed.is_set(other).unwrap_or(false));
    if others {
        // Best effort: where it is refused, the thread runs wherever it is put.
        let _ = sched_setaffinity(this_thread, &allowed);
    }
}

#[cfg(not(target_os = "linux"))]
fn avoid_cpu(_cpu: usize) {}

#[cfg(test)]
mod tests {
    use super::beside;

    #[test]
    fn both_results_come_back() {
        let data = [1, 2, 3];
        let (sum, len) = beside(|| data.iter().sum::<i32>(), || data.len());
        assert_eq!((sum, len), (6, 3));
    }

    #[test]
    #[should_panic(expected = "from the other thread")]
    fn a_panic_on_the_other_thread_reaches_the_caller() {
        beside(|| (), || panic!("from the other thread"));
    }
}
