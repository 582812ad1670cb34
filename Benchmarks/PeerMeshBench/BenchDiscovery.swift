import ArgumentParser
import FoundationEssentials
import PeerMesh
#if canImport(Glibc)
import Glibc
#endif

extension BenchCommand.Run {
    /// `discovery --advertise NAME` advertises until SIGTERM; `discovery --browse NAME` prints one JSON line as
    /// soon as a peer called NAME is found (the harness times advertise start → that line, as it does for
    /// avahi-publish → avahi-browse).
    func discovery() async throws {
        let type = service.hasPrefix("_") ? String(service.dropFirst().prefix { $0 != "." }) : service
        var configuration = Session.Configuration()
        configuration.listenHost = "0.0.0.0"
        if let name = advertise {
            let session = try Session(identity: try Identity.generate(displayName: name), configuration: configuration)
            let advertiser = try Advertiser(session: session, serviceType: type)
            try await advertiser.start()
            // Scripts/bench stops the advertiser with SIGTERM.
            for await _ in BenchSignal(SIGTERM).arrivals { break }
            advertiser.stop()
            await session.disconnect()
        } else if let name = browse {
            let session = try Session(identity: try Identity.generate(displayName: "bench-browser"), configuration: configuration)
            let browser = try Browser(session: session, serviceType: type)
            try await browser.start()
            for await event in browser.events {
                if case .found(let peer, _) = event, peer.displayName == name {
                    writeLine("{\"scenario\":\"discovery\",\"found\":\"\(name)\"}")
                    break
                }
            }
            browser.stop()
            await session.disconnect()
        } else {
            printError("discovery needs --advertise NAME or --browse NAME")
            throw ExitCode(2)
        }
    }
}
