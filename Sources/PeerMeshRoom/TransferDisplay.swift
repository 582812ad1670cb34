/// Where a face shows the transfers under way as they move (the terminal's status line): the room says when each
/// starts and ends, and the face samples it as often as it redraws.
package protocol TransferDisplay: Sendable {
    /// Starts showing a transfer; `sample` says how far it is. Returns its handle, or nil when nothing is shown now.
    func beginTransfer(name: String, direction: RoomTransfers.Direction, total: Int64,
                       sample: @escaping @Sendable (ContinuousClock.Instant) -> TransferSample) -> Int?
    /// Stops showing it; with `summary`, its final state stays as a line of its own.
    func endTransfer(_ handle: Int, summary: Bool)
}
