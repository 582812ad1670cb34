import PeerMeshRoom
import ArgumentParser
import FoundationEssentials
import PeerMesh
#if canImport(Glibc)
import Glibc
#endif

/// `peermesh web [ROOM]`: the room in a browser.
struct WebCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "web",
        abstract: "Open the room in your web browser: a local page to host or join a room, chat, and send and receive files.",
        discussion: """
            The page is served on loopback only (127.0.0.1, and ::1 where the machine has it), for your user only, with a secret that is new each time (in the address's \
            #fragment, which the browser never sends anywhere). Quitting (Ctrl-C, or Leave in the page) closes it. \
            With ROOM, the page opens in that room: joined when it is found nearby, else hosted. docs/web-room.md has the details.
            """
    )

    @Argument(help: "A room to be in at once: joined when found nearby (as `peermesh join` takes it), else hosted.")
    var room: String?

    @Flag(help: "Print the page's address instead of opening a browser.")
    var noOpen = false

    @Option(help: "Seconds to look for ROOM nearby before hosting it.")
    var timeout: Double = 3

    @OptionGroup var session: SessionOptions
    @OptionGroup var options: RoomOptions
    @OptionGroup var member: MemberOptions
    @OptionGroup var receiving: ReceivingOptions

    @Option(help: AcceptPolicy.help)
    var accept: AcceptPolicy = .all

    func run() async throws {
        try await runRoom {
            let lock = try OneProcessPerIdentity.claim(try session.loadIdentity(), command: "web", room: room.map { RoomSelector($0).roomName } ?? "")
            // The page asks before files arrive unless --files says otherwise: a person is looking at it.
            var receiving = self.receiving
            receiving.files = receiving.files ?? .ask
            let mesh = try makeSession(session, maxPeers: member.maxPeers, receiving: receiving, json: options.json)
            // No slash commands in a page, and no list of sends to go again after a restart: a page's upload waits in
            // a folder that lives only as long as its send.
            let room = try Room(session: mesh, serviceType: options.serviceType, accept: accept, files: receiving.files ?? .ask,
                                readsCommands: false, offerAnswerWindow: 60, wideArea: try options.wideArea(), output: TerminalPrinter.output(json: options.json))
            let token = WebToken()
            let web = WebRoom(room: room, token: token, lock: lock,
                              uploads: WebUploads(root: UserDirectories.current.cache.appendingPathComponent("peermesh/uploads/\(lock.place.socket.deletingPathExtension().lastPathComponent)")))
            let server = try await WebServer(web: web)
            let launch = WebLaunch(port: server.port, token: token, place: lock.place)
            defer { launch.remove() }
            // The address with its secret goes to the user's own terminal, or to whoever asked for it with --no-open;
            // printed into a log (stdout not a terminal) while a browser opens it, it would only be a leak.
            let shown = isatty(STDOUT_FILENO) == 1 || noOpen ? launch.url : "http://127.0.0.1:\(server.port)/"
            room.output.event(.web(.init(peer: mesh.myPeerID.displayName, peerId: mesh.myPeerID.id, url: shown, port: server.port)),
                              human: "the room's page: \(shown) — Ctrl-C closes it")
            if !noOpen, let problem = launch.open() {
                room.output.error("Could not open a browser (\(problem)); open the address above yourself.")
            }
            let named = self.room, timeout = self.timeout
            await web.run {
                guard let named else { return }
                do { try await web.joinOrHost(named, timeout: timeout) } catch let error as CLIError {
                    web.room.output.error(error.description)
                } catch let error as PeerMeshError {
                    web.room.output.error(UserWords.explain(error), code: error.code)
                } catch {
                    web.room.output.error("\(error)")
                }
            }
            await server.stop()
        }
    }
}
