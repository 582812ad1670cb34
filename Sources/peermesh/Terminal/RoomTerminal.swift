import FoundationEssentials
import PeerMesh
import PeerMeshRoom
#if canImport(Glibc)
import Glibc
#endif

/// The room's own terminal: the person types on a line (`TypedLine` maps it to the room's requests) and reads the
/// room's events printed above it.
extension Room {
    /// Runs until `/quit`, the end of standard input, or SIGINT/SIGTERM; then leaves cleanly.
    ///
    /// On a terminal (standard input and output, no `--json`) the person types on a libedit line with output printed
    /// above it (`LiveScreen`), and the terminal is given back on every way out; elsewhere lines are read and printed
    /// plainly.
    func runInteractive(readInput: Bool = true) async {
        let screen = readInput && !output.json && LiveScreen.isPossible
            ? LiveScreen.start(names: { [session] in session.connectedPeers.map(\.displayName) }, historyFile: LiveScreen.defaultHistoryFile)
            : nil
        Console.route(through: screen)
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.followSession(); return false }
            group.addTask { await self.followAdvertiser(); return false }
            if accept == .ask || files == .ask {
                group.addTask { await self.expireRequests(); return false }
            }
            group.addTask {
                for await _ in TerminationSignals.stream() { return true }
                return true
            }
            group.addTask {
                for await _ in self.leaveRequests { return true }
                return true
            }
            if readInput {
                group.addTask {
                    // `/quit` ends the reading at once: nothing typed after it is done.
                    for await line in screen?.lines ?? LineReader.lines() where await !self.handle(line) { return true }
                    // Ctrl-D on a terminal leaves; a script's input running out (`peermesh host lobby &`) does not.
                    return isatty(STDIN_FILENO) == 1
                }
            }
            while let finished = await group.next() {
                if finished { break }
            }
            await leave()
            group.cancelAll()
        }
        if let screen {
            await screen.stop()
            Console.route(through: nil)
        }
    }

    // MARK: Input

    /// Handles one typed line: does what it asks (`TypedLine`) and says what failed, each on one line.
    /// Returns false once the line asked to leave.
    private func handle(_ typed: String) async -> Bool {
        let asked = TypedLine.parse(typed) { URL(fileURLWithPath: UserDirectories.current.expandingTilde($0)).path }
        switch asked {
        case .nothing:
            break
        case .help:
            writeLine("Type a line to send it to everyone. /send [@name] <path> sends a file or folder, /peers lists members, /quit leaves.")
            writeLine("/transfers lists files on their way; /cancel N stops one, /cancel all stops every one (on both sides).")
            writeLine("Questions (join requests with --accept ask, files with --files ask): y/n answers the one shown, /accept N and /decline N any of them, /requests lists them.")
            if Console.live != nil {
                writeLine("Tab completes @names (a name with spaces comes out as @\"Dan Smith\"), commands and paths; Up and Down recall earlier lines.")
            }
        case .refused(let message):
            output.error(message)
        case .request(.leave):
            return false
        case .request(let request):
            // A file goes on while the person types on.
            if case .send = request {
                Task { await perform(request, typed: typed) }
            } else {
                await perform(request, typed: typed)
            }
        }
        return true
    }

    /// Does a typed request; a y/n with no question shown was a chat line after all.
    private func perform(_ request: RoomRequest, typed: String) async {
        do {
            do { try await perform(request, from: .terminal) } catch is NothingAsked { try await perform(.say(text: typed), from: .terminal) }
        } catch let error as CLIError {
            output.error(error.description)
        } catch let error as PeerMeshError {
            output.error(UserWords.explain(error), code: error.code)
        } catch {
            output.error("\(error)")
        }
    }

}
