import FoundationEssentials
import PeerMesh

/// Who gets in: the `--accept` policy for invitations, and the numbered questions of `--accept ask`.
extension Room {
    /// Answers an invitation to this room under the `--accept` policy.
    package func answer(_ invitation: Invitation) {
        // An invitation names the room it is meant for (another room may share the service type); one with no name
        // comes from a joiner that used our connection code, which points at us and so at our room.
        let wanted = String(decoding: invitation.context, as: UTF8.self)
        guard let identity, wanted.isEmpty || RoomIdentity.sameName(wanted, identity.name) else {
            try? invitation.decline()
            return
        }
        switch accept {
        case .all: try? invitation.accept()
        case .none: try? invitation.decline()
        case .known: if trust.admits(invitation.peer) { try? invitation.accept() } else { try? invitation.decline() }
        case .ask:
            ask(AdmissionRequest(peer: invitation.peer, kind: .invitation, verificationCode: invitation.verificationCode,
                                 isExpired: { invitation.isExpired },
                                 accept: { () throws(PeerMeshError) in try invitation.accept() },
                                 decline: { () throws(PeerMeshError) in try invitation.decline() }))
        }
    }

    /// Whether a member others introduced (reached through relays) may join, under the `--accept` policy: `known`
    /// checks `known_peers`, `ask` queues a numbered request and waits for the answer or the admission's deadline
    /// (then no). The room installs this handler only for those two: with any handler the library pairs end to end
    /// before admitting, which `all` and `none` (who governs who joins through us, not who is in the room) do not
    /// need.
    package func admitMember(_ admission: MemberAdmission) async -> Bool {
        switch accept {
        case .all, .none: return true   // not reached: no handler is installed for these
        case .known: return trust.admits(admission.peer)
        case .ask:
            let answer = PendingAnswer()
            let deadline = admission.deadline
            ask(AdmissionRequest(peer: admission.peer, kind: .member(via: admission.introducer), verificationCode: admission.verificationCode,
                                 isExpired: { ContinuousClock.now >= deadline },
                                 accept: { answer.resolve(true) }, decline: { answer.resolve(false) }))
            return await answer.value()
        }
    }

    /// Queues `request` and shows its prompt, or, while another prompt is shown, lists it as also waiting.
    package func ask(_ request: AdmissionRequest) {
        let (entry, shown) = requests.withLockedValue { $0.add(request) }
        if entry.number == shown.number {
            prompt(entry)
        } else {
            output.event(.questionWaiting(Self.question(entry)), human: """
                also waiting: \(Self.describe(entry)) — /accept \(entry.number) or /decline \(entry.number) answers it; \
                y/n still answers #\(shown.number)
                """)
        }
    }

    /// Answers the question `selector` names, or the one shown (throws `NothingAsked` when none is); `always`, when
    /// accepting a member's files, takes its files without asking from now on (never lets anyone into the room).
    /// An answer that finds no question is said as an error, or thrown (`CLIError`, exit 4) when `refusalsThrow`.
    package func answerQuestion(_ selector: AdmissionQueue.Selector?, accept: Bool, always: Bool, refusalsThrow: Bool = false) throws {
        let taken: Result<AdmissionQueue.Taken, AdmissionQueue.Refusal>
        if let selector {
            taken = requests.withLockedValue { $0.take(selector, at: .now) }
        } else {
            guard let shown = requests.withLockedValue({ $0.takeShown(at: .now) }) else { throw NothingAsked() }
            taken = shown
        }
        if accept, always, case .success(let entry) = taken {
            switch entry.entry.request.kind {
            case .file, .fileSet: trustedSenders.withLockedValue { _ = $0.insert(entry.entry.request.peer.id) }
            case .invitation, .member: break
            }
        }
        if refusalsThrow, case .failure(let refusal) = taken { throw CLIError(refusal.message, exitCode: 4) }
        finish(taken, accept: accept)
    }

    /// The questions waiting, as `request` events on `output` (`/requests`).
    package func listRequests(to output: RoomOutput) {
        let (pending, shown) = requests.withLockedValue { ($0.pending, $0.shownRequest?.number) }
        if pending.isEmpty { output.event(.requests(.init(count: 0)), human: "no requests are waiting") }
        for entry in pending {
            output.event(.request(Self.question(entry, shown: entry.number == shown)),
                         human: "\(Self.describe(entry))\(entry.number == shown ? " — shown: y/n answers it" : "")")
        }
    }

    /// Drops expired requests (saying so) and shows the next prompt, four times a second until cancelled (`--accept
    /// ask` only: no other policy queues requests).
    package func expireRequests() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(250))
            let (expired, next) = requests.withLockedValue { $0.removeExpired(at: .now) }
            for entry in expired {
                try? entry.request.decline()   // tells a waiting member admission "no"; an invitation has expired already
                let human: TerminalLine = if case .file(let name, _) = entry.request.kind {
                    entry.request.unanswered() ? "you did not answer \(entry.request.peer.displayName)'s \"\(name)\" (#\(entry.number)) in time: declined"
                                               : "\(entry.request.peer.displayName) withdrew \"\(name)\" (#\(entry.number)) before you answered"
                } else if case .fileSet(let label, _, _, _) = entry.request.kind {
                    "you did not answer \(entry.request.peer.displayName)'s \"\(label)\" (#\(entry.number)) in time: declined"
                } else {
                    "request #\(entry.number) from \(entry.request.peer) expired before it was answered"
                }
                output.event(.requestExpired(Self.question(entry)), human: human)
            }
            if let next { prompt(next) }
        }
    }

    // MARK: Helpers

    /// Applies an answer to the request it was bound to, then prints the prompt that replaced it, if any.
    private func finish(_ taken: Result<AdmissionQueue.Taken, AdmissionQueue.Refusal>, accept: Bool) {
        switch taken {
        case .failure(let refusal):
            output.error(refusal.message)
        case .success(let taken):
            let entry = taken.entry
            do {
                if accept { try entry.request.accept() } else { try entry.request.decline() }
                output.event(.answered(Self.question(entry, answer: accept ? "accepted" : "declined")),
                             human: "\(accept ? "accepted" : "declined") #\(entry.number) \(entry.request.peer)")
            } catch {
                output.error("Request #\(entry.number) from \(entry.request.peer): \(UserWords.explain(error))", code: error.code)
            }
            if let next = taken.nextShown { prompt(next) }
        }
    }

    /// Says every waiting question again, as `question` events on `output` (a page that just connected).
    package func replayQuestions(to output: RoomOutput) {
        for entry in requests.withLockedValue({ $0.pending }) { prompt(entry, on: output) }
    }

    private func prompt(_ entry: AdmissionQueue.Pending, on output: RoomOutput? = nil) {
        (output ?? self.output).event(.question(Self.question(entry)),
                                      human: "\(Self.describe(entry)) — accept? y/n (or /accept \(entry.number), /decline \(entry.number))")
    }

    /// `#1 alice wants to join — key a1b2-…, verification code 123 456`, or `#2 alice offers "notes.txt" (1.2 KiB)`.
    private static func describe(_ entry: AdmissionQueue.Pending) -> TerminalLine {
        let request = entry.request
        let how: TerminalLine
        switch request.kind {
        case .file(let name, let size):
            let folder = name.contains("/") ? ", from a folder (your answer holds for the rest of it)" : ""
            return "#\(entry.number) \(request.peer.displayName) offers \"\(name)\" (\(NumberText.bytes(Int64(clamping: size))))\(folder)"
        case .fileSet(let label, let count, let bytes, let names):
            let inFolder = names.allSatisfy { $0.hasPrefix(label + "/") }
            let what: TerminalLine = inFolder ? "folder \"\(label)\" (\(count) files, \(NumberText.bytes(bytes)))" : "\(count) files (\(NumberText.bytes(bytes)))"
            let shown = names.prefix(3).map { inFolder ? String($0.dropFirst(label.count + 1)) : $0 }
            let more = count > shown.count ? " and \(count - shown.count) more" : ""
            return "#\(entry.number) \(request.peer.displayName) offers \(what.text): \(shown.joined(separator: ", "))\(more)"
        case .invitation: how = "wants to join"
        case .member(let introducer): how = "wants to join as a member introduced by \(introducer)"
        }
        return "#\(entry.number) \(request.peer.displayName) \(how) — key \(request.peer.fingerprint), verification code \(request.verificationCode)"
    }

    private static func question(_ entry: AdmissionQueue.Pending, shown: Bool? = nil, answer: String? = nil) -> RoomEvent.Question {
        let peer = entry.request.peer
        var question = RoomEvent.Question(peer: peer.displayName, peerId: peer.id, number: entry.number, kind: "invitation",
                                          fingerprint: peer.fingerprint, code: entry.request.verificationCode, shown: shown, answer: answer)
        switch entry.request.kind {
        case .invitation:
            break
        case .member(let introducer):
            question.kind = "member"
            (question.via, question.viaId) = (introducer.displayName, introducer.id)
        case .file(let name, let size):
            (question.kind, question.file, question.bytes) = ("file", name, Int64(clamping: size))
            (question.code, question.fingerprint) = (nil, nil)
        case .fileSet(let label, let count, let bytes, let names):
            (question.kind, question.file, question.files, question.bytes) = ("files", label, count, bytes)
            question.names = names.prefix(3).joined(separator: "\n")
            (question.code, question.fingerprint) = (nil, nil)
        }
        return question
    }
}
