/// `--help`: the options, the scenarios and their targets, the contract with `peermesh-bench` and a CPU-profile
/// recipe. Kept word for word from the bash harness, so the text is one raw string.
func usageText(prog: String) -> String {
    #"""
    Usage: \#(prog) [options]

    Benchmarks PeerMesh against real baseline tools and prints a markdown table:
      scenario | PeerMesh | baseline | ratio | target | met?
    followed by the peak RSS of every measured process. A full run rewrites BENCHMARKS.md at the repository
    root (never edit that file by hand). Needs root (network namespaces, apt-get) and about 5-10 minutes on
    2 cores after the release build.

    Options:
      --quick            smoke run: 1 repetition, 1-2 s durations, 64 MiB file, roster N=8 only.
                         Does not write BENCHMARKS.md unless --output is given.
      --reps N           repetitions per scenario (default 3; the median is reported)
      --only LIST        comma-separated subset of: \#(Scenario.allIDs.joined(separator: " "))
                         When the output file exists, the rows (and peak RSS) of the other scenarios are kept
                         from it, and a "Measured" note says which run each row comes from.
      --output FILE      where to write the table (default: <repo>/BENCHMARKS.md for a full run)
      --no-output        do not write any file, only print
      --no-build         do not build peermesh-bench and peermesh (release) first
      --no-install       do not apt-get install missing baseline tools
      --peermesh PATH    benchmark with this peermesh-bench binary instead of <repo>/.build/release/peermesh-bench
      --keep             keep the temporary work directory (logs) for inspection
      -h, --help         this text

    Scenarios (ratio = PeerMesh / baseline in every row; targets are written the same way):
      throughput  reliable 1 MiB messages, TLS        vs iperf3 -c 127.0.0.1 (one TCP stream)     >= 0.6x
                  and the peak RSS of sender and receiver vs Zyre's 9-28 MiB (issue #41)     <= 48 MiB each
      messages    reliable 64 B messages/s            vs sockperf tp --tcp -m 64                  >= 0.25x
                  and the sender's peak RSS vs Zyre's 9-28 MiB (issue #41)                   <= 32 MiB
                  and the CPU time per message of both processes (user + system from GNU time, start-up
                  included; instruction counts are out of reach here: this VM has no PMU for perf stat, and
                  valgrind 3.19 crashes on the release build)                               (no target)
      unreliable  unreliable 64 B messages delivered/s vs sockperf tp -m 64 (UDP, its sending rate) (no target)
                  and a game tick: 8 members in one process, 60 Hz, 64 B to every other member, in a
                  namespace of its own with nftables dropping 5 % of packets: delivered share and p50/p99
                  latency, against the same loss-free (p99 <= 2x), beside reliable messages under that loss
      rtt         64 B request/response p50/p99 RTT   vs sockperf ping-pong --tcp -m 64 --full-rtt p50 <= 1.5x, p99 <= 2x
                  each with the apps' tasks where they run by default, then on their sessions' event loops
                  (serve and run with --app-on-session-loop: Session.taskExecutor); met? judges the default.
                  Two rows: the machine as it is (the 1-min load average at the row's start is in the row),
                  then the same with a CPU-bound process (sh busy loop) beside it (no target)
                  (sockperf runs with --no-rdtsc: under a hypervisor that traps rdtsc, sockperf's default
                   timing slows its own loop and reported a 4x higher RTT on the reference VM)
      file        1 GiB file, hash verified           vs scp over loopback to a private sshd      >= 3x, RSS <= 64 MiB
                                                      and vs ssh -c aes128-gcm 'cat > /dev/null'  >= 1x
      lul         64 B RTT while a 1 GiB file flows   vs same message, no file (PeerMesh)         added p99 <= 50 ms
      relay       A->B->C, 1 MiB messages (netns line) vs A->B direct (PeerMesh, same link type)   >= 0.6x, relay RSS <= 64 MiB
      lan         at LAN rates: namespaces joined by veth links whose every interface is shaped with tc tbf to
                  1 Gbit/s (no netem in this kernel): the 1 GiB file A -> B vs iperf3 A -> B on the same link  >= 0.95x
                  64 B messages and round trips vs sockperf tp / pp on the same link (beside the loopback rows)
                  and A->B->C through a relay vs A->B direct on the same links (1 MiB messages)       >= 0.95x
      web         1 GiB file from peermesh web (WebSocket upload + PUT, as the page does it) vs the same file
                  with peermesh send, each repetition both, A -> B over one veth (netns), room joined by
                  address, hash and cmp verified; runs .build/release/peermesh (next to peermesh-bench)
                                                                                   >= 0.9x, RSS <= CLI's + 16 MiB
      discovery   advertise start -> browser resolved vs avahi-publish -> avahi-browse -r (2 netns) <= 1.2x
      sites       two sites (gateway + member each, own avahi) joined only by a wireguard-go tunnel between the
                  gateways, knotd serving example.test (TSIG updates); runs .build/release/peermesh:
                  peermesh host --domain on g1 -> peermesh browse --domain on g2 lists the room vs avahi-browse
                  -d -r -t run every 1 s on g2's wide-area avahi-daemon                    <= 1 s and <= 1.2x
                  100 MiB m2 -> m1 relayed by both gateways (/send @desk1) vs scp m2 -> m1, gateways routing  >= 1x
                  gateways routing: direct upgrade m2 <-> m1 in 100 tries (10 quick) vs TCP connects   >= 99 %
      invite      invite -> both .connected           vs TCP connect + mutual TLS 1.3 handshake    <= 3x
                  (python3 ssl client -> openssl s_server, P-256 certificates, one echo to confirm)
      roster      session of N = 8,16,32,64 processes: time to full roster, control bytes per member
                  (a ring on loopback, direct links off, so members reach most others through relays), and the
                  bytes one 1 MiB message costs on the wire, direct and per relayed hop                64: <= 5 s
      install     the newest dist/peermesh_*.deb (Scripts/package): installed size vs openssh-client and
                  avahi-utils; `peermesh --version` start-up vs `ssh -V`, `avahi-browse --version`     <= 2x, .deb <= 25 MiB
      idle        RSS of an idle member: `peermesh host` from the newest .deb on an avahi host once the room is
                  visible, and a library session with one link (peermesh-bench serve --join), read from /proc;
                  the reference is issue #41's Zyre node (8-9 MiB idle), not run here            <= 16 MiB each

    Contract with the PeerMesh benchmark executable ('peermesh-bench', target Benchmarks/PeerMeshBench):
      peermesh-bench serve --ready-file PATH [--encryption required|none] [--listen ADDR]... [--join PATH]...
          listens (default 127.0.0.1, port 0; several --listen: every address, only these in the connection
          data), joins the session of each --join ready file, accepts every invitation, then writes its
          one-line out-of-band connection data to PATH (write a temp file + rename), echoes requests, counts
          bytes, stores received files in its working directory; exits on SIGTERM. (The roster runner also
          uses --join-on-signal, --report, --no-direct-links and --parent-pid: see 'peermesh-bench serve --help'.)
      peermesh-bench run SCENARIO [--connect PATH] [options] --json   -> ONE JSON line on stdout, exit 0
          throughput --message-size 1048576 --seconds S      {"bits_per_second":B,"bytes":N,"seconds":S}
          messages   --message-size 64 --seconds S           {"messages_per_second":M}
          unreliable --message-size 64 --seconds S           {"messages_per_second":M,"sent":N,"delivered":D}
                     (the server counts what arrived and says so on a reliable 'C' message)
          game-tick  --members 8 --hz 60 --seconds S --mode unreliable|reliable [--loss P]
                                                             {"p50_us":X,"p99_us":Y,"delivered_fraction":F}
                     (no --connect; --loss only inside a namespace with nothing but loopback)
          rtt        --message-size 64 --count N [--app-on-session-loop]   {"p50_us":X,"p99_us":Y}
          invite     --count N                               {"p50_ms":X,"mean_ms":Y}
          file       --file SRC                              {"bits_per_second":B,"bytes":N,"hash_verified":true}
          latency-under-load --file SRC --message-size 64    {"idle_p50_ms":..,"idle_p99_ms":..,
                                                              "loaded_p50_ms":..,"loaded_p99_ms":..}
          relay      --to PATH --message-size 1048576 --seconds S   {"bits_per_second":B}
                     (throughput to the peer whose ready file is PATH, counted at that peer; the harness runs
                      A, B, C in a line of network namespaces, B and C started with serve --listen/--join)
          discovery  --advertise NAME --service _pmbench._tcp   (no --connect; runs until SIGTERM)
          discovery  --browse NAME --service _pmbench._tcp --json  (prints one JSON line when NAME is resolved,
                                                                    then exits 0)
          roster     --members N --message-size 1048576      {"converge_ms":X,"control_bytes_per_member":Y}
                     (no --connect; spawns and reaps its own N member processes on loopback; optional keys
                      direct_overhead_per_hop_bytes, relayed_overhead_per_hop_bytes, relayed_hops: the bytes on
                      the wire for one --message-size message beyond its size, per hop)
      A scenario whose capability has not landed exits 3 (or its stderr says "unknown scenario|subcommand|
      option", "unexpected argument" or "not implemented"): its row shows "not yet". Any other failure is an error: the table is still printed, then \#(prog) exits 1.
      Missed targets never fail the run.

    CPU profile recipe (by hand; the harness itself never profiles):
      swift build -c release --product peermesh-bench -Xswiftc -g        # release build with debug info
      .build/release/peermesh-bench serve --ready-file /tmp/pm.ready & SERVE=$!
      # perf (sampling, cheap): the client side; use 'perf record -g -p $SERVE' for the server side
      perf record -F 999 --call-graph dwarf -o /tmp/pm.perf.data -- \
          .build/release/peermesh-bench run throughput --connect /tmp/pm.ready \
          --message-size 1048576 --seconds 5 --json
      perf report -i /tmp/pm.perf.data --no-children --stdio | swift demangle --simplified | less
      kill $SERVE; rm -f /tmp/pm.ready
      # valgrind callgrind (exact instruction counts, ~50x slower). Debian 12's valgrind 3.19 stops on the
      # toolchain's DWARF 5 and on libdispatch's read-only rt_sigsuspend mask (at the exit of an async main):
      # run a copy without debug info, with a sigsuspend that hands the kernel a writable copy of the mask.
      objcopy --strip-debug .build/release/peermesh-bench /tmp/pmb
      printf '%s\n' '#define _GNU_SOURCE' '#include <signal.h>' '#include <unistd.h>' '#include <sys/syscall.h>' \
          'int sigsuspend(const sigset_t *m) { sigset_t c = *m; return syscall(SYS_rt_sigsuspend, &c, _NSIG / 8); }' \
          | gcc -O2 -shared -fPIC -x c -o /tmp/vgshim.so -
      export LD_PRELOAD=/tmp/vgshim.so
      valgrind --tool=callgrind --callgrind-out-file=/tmp/pm.serve.cg /tmp/pmb serve --ready-file /tmp/pm.ready & SERVE=$!
      # per round trip = the difference of two runs (start-up cancels out); the server's counts per run come
      # from zeroing before it (callgrind_control -z $SERVE) and dumping after it (callgrind_control -d $SERVE)
      for n in 1000 4000; do valgrind --tool=callgrind --callgrind-out-file=/tmp/pm.rtt$n.cg \
          /tmp/pmb run rtt --connect /tmp/pm.ready --message-size 64 --count $n --json; done
      callgrind_annotate --inclusive=yes /tmp/pm.rtt4000.cg | swift demangle --simplified | head -60
      kill $SERVE                                                  # (kcachegrind /tmp/pm.rtt4000.cg: GUI)
      # Time-driven work (10 ms acknowledgement timer) happens per message ~50x more often under valgrind:
      # compare counts between builds, never against the real rates.
    """#
}
