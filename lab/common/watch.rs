//! Watching the other processes of a running cluster, so that one that dies
//! or freezes ends the run with one line instead of a cascade of panics or a
//! silent wait.
//!
//! Timely's communication threads panic when a peer's connection breaks,
//! and every worker then panics on the poisoned queues: dozens of lines of
//! backtrace and no word on which process went away. A peer that is stopped
//! (SIGSTOP, a debugger, swapping) leaves the others waiting forever. So
//! each process keeps a second connection to every other on which it sends
//! a heartbeat; a heartbeat missing for the stall timeout, or a connection
//! closed without a goodbye, ends the process with one line naming the peer.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::common::Error;

/// How often a process tells the others it is alive.
const BEAT: Duration = Duration::from_millis(250);
/// A heartbeat.
const ALIVE: u8 = b'.';
/// Sent when the run ended well, so that the connection closing is expected.
const DONE: u8 = b'!';

/// Which process this is and where the others are, for the panic hook.
static CLUSTER: Mutex<Option<(usize, Vec<String>)>> = Mutex::new(None);

/// The heartbeat thread of a running process; [`Watch::finish`] says
/// goodbye to the others once the run is over.
pub(crate) struct Watch {
    finished: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Watch {
    /// Starts watching `links` (one per other process, `None` at `me`),
    /// giving up on a peer silent for `stall`.
    pub(crate) fn start(me: usize, addresses: Vec<String>, links: Vec<Option<TcpStream>>, stall: Duration) -> Self {
        report_lost_connections(me, addresses.clone());
        let finished = Arc::new(AtomicBool::new(false));
        let done = Arc::clone(&finished);
        let mut peers: Vec<Peer> = links
            .into_iter()
            .enumerate()
            .filter_map(|(index, link)| link.map(|stream| Peer::new(index, stream)))
            .collect();
        let thread = std::thread::Builder::new()
            .name("equipoise:watch".into())
            .spawn(move || {
                let quiet_after = stall.min(Duration::from_secs(5)).max(BEAT * 4) / 2;
                while !done.load(Ordering::Acquire) {
                    for peer in peers.iter_mut().filter(|peer| !peer.finished) {
                        let here = |what: String| format!("process {me} at {}: {what}", addresses[me]);
                        let name = format!("process {} at {}", peer.index, addresses[peer.index]);
                        match peer.listen() {
                            Heard::Gone => fail(&here(format!("{name} disconnected during the run"))),
                            Heard::Silent(quiet) if quiet >= stall => fail(&here(format!(
                                "{name} sent nothing for {:.0} s (--stall-timeout-s): stopped or frozen",
                                quiet.as_secs_f64()
                            ))),
                            Heard::Silent(quiet) if quiet >= quiet_after && !peer.warned => {
                                peer.warned = true;
                                eprintln!(
                                    "{}",
                                    here(format!(
                                        "nothing from {name} for {:.1} s; giving up after {:.1} s (--stall-timeout-s)",
                                        quiet.as_secs_f64(),
                                        stall.as_secs_f64()
                                    ))
                                );
                            }
                            Heard::Alive if peer.warned => {
                                peer.warned = false;
                                eprintln!("{}", here(format!("{name} is heard from again")));
                            }
                            _ => {}
                        }
                        peer.send(ALIVE);
                    }
                    std::thread::sleep(BEAT);
                }
                for peer in peers.iter_mut() {
                    peer.send(DONE);
                }
            })
            .expect("spawning the cluster watch thread");
        Watch {
            finished,
            thread: Some(thread),
        }
    }

    /// The run ended well here: tells the others, so that this process
    /// exiting does not read as a failure.
    pub(crate) fn finish(mut self) {
        self.finished.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One other process, as the watch sees it.
struct Peer {
    index: usize,
    stream: TcpStream,
    heard: Instant,
    warned: bool,
    /// It said its run ended well.
    finished: bool,
}

/// What a peer's connection said since last asked.
enum Heard {
    Alive,
    Silent(Duration),
    Gone,
}

impl Peer {
    fn new(index: usize, stream: TcpStream) -> Self {
        // Nonblocking: one thread watches every peer, and a frozen peer's
        // full buffer must not stop it.
        let _ = stream.set_nonblocking(true);
        Peer {
            index,
            stream,
            heard: Instant::now(),
            warned: false,
            finished: false,
        }
    }

    fn listen(&mut self) -> Heard {
        let mut buffer = [0u8; 64];
        let mut heard = false;
        loop {
            match self.stream.read(&mut buffer) {
                Ok(0) => return if self.finished { Heard::Alive } else { Heard::Gone },
                Ok(read) => {
                    heard = true;
                    self.finished |= buffer[..read].contains(&DONE);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                // A peer that said goodbye and exited with our last heartbeat
                // unread resets the connection: its run ended well.
                Err(_) => return if self.finished { Heard::Alive } else { Heard::Gone },
            }
        }
        if heard {
            self.heard = Instant::now();
            Heard::Alive
        } else {
            Heard::Silent(self.heard.elapsed())
        }
    }

    fn send(&mut self, byte: u8) {
        // A failed write shows as the connection closing on the next read.
        let _ = self.stream.write(&[byte]);
    }
}

/// Turns timely's panics on a broken connection into one line naming the
/// peer, and ends the process before its workers cascade into more panics.
/// Other panics go to the hook that was there before.
fn report_lost_connections(me: usize, addresses: Vec<String>) {
    *CLUSTER.lock().unwrap_or_else(|e| e.into_inner()) = Some((me, addresses));
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = info
                .payload()
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| info.payload().downcast_ref::<&str>().copied())
                .unwrap_or("");
            // Timely names its threads `timely:send-P` and `timely:recv-P`
            // after the peer P they talk to, and starts these panics' messages
            // with "timely communication error".
            let thread = std::thread::current();
            let peer = thread
                .name()
                .and_then(|name| name.strip_prefix("timely:send-").or(name.strip_prefix("timely:recv-")))
                .and_then(|peer| peer.parse::<usize>().ok());
            let cluster = CLUSTER.lock().unwrap_or_else(|e| e.into_inner()).clone();
            match (peer, cluster) {
                (Some(peer), Some((me, addresses)))
                    if message.starts_with("timely communication error") && peer < addresses.len() =>
                {
                    fail(&format!(
                        "process {me} at {}: process {peer} at {} disconnected during the run ({})",
                        addresses[me],
                        addresses[peer],
                        message.trim_start_matches("timely communication error: ")
                    ))
                }
                _ => previous(info),
            }
        }));
    });
}

/// Prints `what` as the program's one line about the cluster and ends the
/// process; a second caller waits for the first to have done so.
fn fail(what: &str) -> ! {
    static ENDING: Mutex<()> = Mutex::new(());
    let _only = ENDING.lock();
    let program = std::env::args()
        .next()
        .as_deref()
        .and_then(|path| std::path::Path::new(path).file_name()?.to_str().map(str::to_owned))
        .unwrap_or_default();
    eprintln!("{program}: {}", Error::Cluster(what.to_owned()));
    std::process::exit(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A connected pair on 127.0.0.1: (ours, theirs).
    fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let ours = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (theirs, _) = listener.accept().unwrap();
        (ours, theirs)
    }

    /// Reads until the peer's connection is over (or a second has passed).
    fn last_word(peer: &mut Peer) -> Heard {
        let deadline = Instant::now() + Duration::from_secs(1);
        loop {
            let heard = peer.listen();
            if matches!(heard, Heard::Gone) || Instant::now() >= deadline {
                return heard;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_peer_that_said_goodbye_may_reset_the_connection() {
        let (ours, mut theirs) = pair();
        let mut peer = Peer::new(1, ours);
        // Our heartbeat left unread makes their exit a reset, not a close.
        peer.send(ALIVE);
        std::thread::sleep(Duration::from_millis(20));
        theirs.write_all(&[ALIVE, DONE]).unwrap();
        drop(theirs);
        assert!(matches!(last_word(&mut peer), Heard::Alive));
        assert!(peer.finished);
    }

    #[test]
    fn a_peer_gone_without_goodbye_is_lost() {
        let (ours, mut theirs) = pair();
        let mut peer = Peer::new(1, ours);
        peer.send(ALIVE);
        std::thread::sleep(Duration::from_millis(20));
        theirs.write_all(&[ALIVE]).unwrap();
        drop(theirs);
        assert!(matches!(last_word(&mut peer), Heard::Gone));
        assert!(!peer.finished);
    }
}
