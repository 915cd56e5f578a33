//! The CPU time a thread has used: what a run costs apart from how long it
//! took (a balanced run can finish sooner on more CPU).

/// Seconds of CPU (user and system) the calling thread has used so far;
/// `None` where the platform does not say.
pub fn thread_cpu_seconds() -> Option<f64> {
    #[cfg(target_os = "linux")]
    {
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
        // SAFETY: getrusage writes a whole rusage on success, and we read
        // it only then.
        let usage = unsafe {
            if libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) != 0 {
                return None;
            }
            usage.assume_init()
        };
        let seconds = |time: libc::timeval| time.tv_sec as f64 + time.tv_usec as f64 / 1e6;
        Some(seconds(usage.ru_utime) + seconds(usage.ru_stime))
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_thread_uses_cpu_and_a_sleeping_one_little() {
        let Some(start) = thread_cpu_seconds() else { return };
        // Busy until the thread's own clock has moved (the test waits on
        // the measure, not on a fixed time), or for long enough that it
        // should have.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut spins = 0u64;
        while thread_cpu_seconds().unwrap() - start < 0.02 && std::time::Instant::now() < deadline {
            spins = std::hint::black_box(spins + 1);
        }
        let busy = thread_cpu_seconds().unwrap();
        assert!(busy - start >= 0.02, "{spins} spins in 10 s charged {} s", busy - start);
        std::thread::sleep(std::time::Duration::from_millis(50));
        // Sleeping is not charged (a generous bound: the wake-up is).
        assert!(thread_cpu_seconds().unwrap() - busy < 0.04);
    }
}
