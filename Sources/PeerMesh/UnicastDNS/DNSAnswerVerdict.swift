import PeerMeshCore

/// What a received message is to the request waiting for it.
enum DNSAnswerVerdict: Sendable {
    /// Our answer: a response with our ID and our question.
    case answer(DNSMessage)
    /// Not ours (another ID or question, or a request): keep waiting; a spoofer must guess both.
    case ignore
    /// It carries our ID but cannot be decoded: kept to report if no good answer comes.
    case malformed(PeerMeshError)

    /// Judges `bytes` as the answer to the request with `id` asking `question`.
    static func judge(_ bytes: [UInt8], id: UInt16, question: DNSQuestion) -> DNSAnswerVerdict {
        let message: DNSMessage
        do {
            message = try DNSMessage(decoding: bytes)
        } catch {
            // Only bytes that at least carry our ID count against the server; anything else is noise.
            guard bytes.count >= 2, UInt16(bytes[0]) << 8 | UInt16(bytes[1]) == id else { return .ignore }
            return .malformed(error as? PeerMeshError ?? PeerMeshError(.malformedDNSMessage, "\(error)"))
        }
        guard message.isResponse, message.id == id else { return .ignore }
        // Servers may leave the question out of an error answer (FORMERR, NOTIMP); its code is all it says.
        if message.questions == [question] || message.questions.isEmpty && message.responseCode != .noError {
            return .answer(message)
        }
        return .ignore
    }
}
