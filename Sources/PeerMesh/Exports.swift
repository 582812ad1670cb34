import FoundationEssentials
@_exported import PeerMeshCore

extension PeerMeshError: LocalizedError {
    /// The human message, so `localizedDescription` says what to do.
    public var errorDescription: String? { message }
}
