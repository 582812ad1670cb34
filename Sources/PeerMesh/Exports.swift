@_exported import PeerMeshCore

import Foundation

extension PeerMeshError: LocalizedError {
    /// The human message, so `localizedDescription` says what to do.
    public var errorDescription: String? { message }
}
