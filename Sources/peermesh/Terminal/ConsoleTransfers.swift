import PeerMeshRoom

/// The room's transfers on the live terminal's status line, when there is one (`Console.live`).
struct ConsoleTransfers: TransferDisplay {
    func beginTransfer(name: String, direction: RoomTransfers.Direction, total: Int64,
                       sample: @escaping @Sendable (ContinuousClock.Instant) -> TransferSample) -> Int? {
        Console.live?.beginTransfer(name: name, direction: direction, total: total, sample: sample)
    }

    func endTransfer(_ handle: Int, summary: Bool) {
        Console.live?.endTransfer(handle, summary: summary)
    }
}
