import FoundationEssentials
import PeerMesh

/// The room's events: what the session and the advertisement report, said on the room's output.
extension Room {
    /// Says what happens in the session: members coming, going and verified, messages, files, warnings.
    package func followSession() async {
        for await event in session.events {
            switch event {
            case .invitation(let invitation):
                answer(invitation)
            case .peerChanged(let peer, .connected):
                // A direct member's link code is known now; one reached through relays gets its code from the
                // end-to-end pairing that follows (`peerVerified`).
                let security = await session.security(of: peer)
                if let code = security?.linkCode {
                    output.event(.joined(.init(peer: peer.displayName, peerId: peer.id, code: code, encryption: Self.protection(security))),
                                 human: "\(peer) joined — verification code \(code) — \(Self.protection(security))")
                } else {
                    output.event(.joined(.init(peer: peer.displayName, peerId: peer.id)), human: "\(peer) joined through the room — verifying end to end…")
                }
                resendUnfinished(to: peer)
            case .peerVerified(let peer, let security):
                guard security.link == nil, let code = security.endToEndCode else { break }
                output.event(.verified(.init(peer: peer.displayName, peerId: peer.id, code: code, encryption: Self.protection(security))),
                             human: "\(peer) — verification code \(code) (end to end) — \(Self.protection(security))")
            case .peerChanged(_, .notConnected(let reason?)) where reason.code == .sessionClosed:
                break   // we are the one leaving: every member "leaves" us at once, which is no news to the person
            case .peerChanged(let peer, .notConnected(let reason?)) where reason.code == .linkReplaced:
                // Not a departure: the peer is still there, talking to our other process.
                forgetFolderAnswers(of: peer)
                fileSets.end(offersTo: peer)
                output.event(.replaced(.init(peer: peer.displayName, peerId: peer.id, code: reason.code.name)),
                             human: "\(peer.displayName) is now connected to another process with your identity, not to this one: \(UserWords.explain(reason))")
            case .peerChanged(let peer, .notConnected(let reason)):
                forgetFolderAnswers(of: peer)
                fileSets.end(offersTo: peer)
                let why = UserWords.leaveReason(reason)
                let said = why.flatMap { why in reason.map { (why, $0.code.name) } }
                output.event(.left(.init(peer: peer.displayName, peerId: peer.id, reason: said?.0, code: said?.1)), human: "\(peer.displayName) left\(why.map { " (\($0))" } ?? "")")
            case .peerChanged:
                break
            case .received(let data, let peer):
                let message = RoomMessage.decode(data)
                switch message.kind {
                case .chat:
                    output.event(.message(.init(peer: peer.displayName, peerId: peer.id, text: message.text ?? "")),
                                 human: "\(peer.displayName): \(message: message.text ?? "")")
                    if !message.id.isEmpty { try? await session.send(RoomMessage.ack(message.id).encoded, to: [peer]) }
                case .ack:
                    ackSink.yield((message.id, peer))
                    fileSets.heard(message, from: peer)
                case .answer:
                    fileSets.heard(message, from: peer)
                case .skipped:
                    let count = message.files?.count ?? 0
                    output.event(.fileAlreadyHere(.init(peer: peer.displayName, peerId: peer.id, file: message.text ?? "", files: count)),
                                 human: "\(count) file(s) of \(peer.displayName)'s \"\(message.text ?? "")\" are already here (same name, size and SHA-256): not sent again")
                case .offer:
                    // Acknowledged at once, so the sender knows we understood; answered when decided.
                    try? await session.send(RoomMessage.ack(message.id).encoded, to: [peer])
                    offeredSet(message, from: peer)
                }
            case .resourceOffered(let offer):
                offered(offer)   // only under --files ask: the session asks only then
            case .resourceSendChanged(let file, let peer, let progress, let phase):
                sendChanged(file, to: peer, progress, phase)
            case .resourceStarted(let file, let peer, let progress, let offset):
                started(file, from: peer, progress, resumedFrom: Int64(clamping: offset))
            case .resourceFinished(let file, let peer, let result):
                finished(file, from: peer, result)
            case .streamOpened(let stream, let peer, let bytes):
                // Rooms exchange messages and files; another app's stream is read and dropped so it cannot stall.
                output.event(.streamIgnored(.init(peer: peer.displayName, peerId: peer.id, stream: stream)),
                             human: "\(peer.displayName) opened a stream \"\(stream)\" (rooms do not use streams; ignored)")
                Task { do { for try await _ in bytes {} } catch {} }
            case .undelivered(let messages, let peer, let reason):
                let texts = messages.map { RoomMessage.decode($0) }.filter { $0.kind == .chat }.compactMap(\.text)
                if !texts.isEmpty {
                    let why = UserWords.explain(reason)
                    output.event(.undelivered(.init(peer: peer.displayName, peerId: peer.id, count: texts.count, message: why)),
                                 human: "\(texts.count) message(s) to \(peer.displayName) may not have arrived: \(why)")
                }
            case .pairingAbandoned(let abandonment):
                output.event(.pairingAbandoned(.init(peer: abandonment.peer?.displayName ?? "", address: abandonment.address ?? "",
                                                     inLastHour: abandonment.abandonedInLastHour, pairingsWait: abandonment.newPairingsWait)),
                             human: "warning: \(abandonment)")
            case .incomingConnectionFailed(let peer, let error):
                let why = UserWords.explain(error)
                output.event(.connectionFailed(.init(message: why, code: error.code.name, peer: peer?.displayName ?? "")),
                             human: "a connection\(peer.map { " from \($0.displayName)" } ?? "") failed: \(why)")
            }
        }
    }

    /// Says what happens to our advertisement of the room.
    package func followAdvertiser() async {
        guard case let (identity?, advertiser?) = state.withLockedValue({ $0 }) else { return }
        let name = identity.name
        for await event in advertiser.events {
            switch event {
            case .published(let instance):
                output.event(.advertised(.init(room: name, instance: instance)), human: "room \"\(name)\" is visible as \"\(instance)\"")
            case .renamed(let instance):
                output.event(.renamed(.init(instance: instance)), human: "the name was taken; now visible as \"\(instance)\"")
            case .discoveryDown(let error):
                output.event(.discoveryDown(.init(message: error.message)), human: "discovery is down: \(error.message)")
            case .discoveryRestored:
                output.event(.discoveryRestored, human: "discovery is back")
            case .failed(let error):
                output.error(error.message)
            case .publishedInDomain(let domain, let omitted):
                let left = omitted.isEmpty ? "" : " (left out to fit 512 bytes: \(omitted.joined(separator: ", ")))"
                output.event(.published(.init(room: name, domain: domain, omitted: omitted.joined(separator: " "))),
                             human: "room \"\(name)\" is published in \(domain)\(left): other sites join with `peermesh join \(KnownPeersHelp.shellWord(name)) --domain \(domain)`")
            case .domainFailed(let domain, let error):
                // Without an address there is nothing to retry; a server's refusal or silence is retried at each refresh.
                let retry = error.code == .noPublishableAddress ? "" : " (tried again in a minute)"
                output.event(.publishFailed(.init(domain: domain, message: error.message, code: error.code.name)),
                             human: "could not publish the room in \(domain)\(retry): \(UserWords.explain(error))")
            }
        }
    }
}
