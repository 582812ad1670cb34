import Foundation
import PeerMesh

/// The error domain of Multipeer Connectivity errors.
public let MCErrorDomain: String = "MCErrorDomain"

/// An error from Multipeer Connectivity: a code from MC's set, with PeerMesh's message (which says what to do)
/// as its localized description and PeerMesh's own code under `MCError.peerMeshCodeKey` in `userInfo`.
public struct MCError: CustomNSError, Hashable, LocalizedError, Sendable {
    /// The codes Multipeer Connectivity uses.
    @frozen
    public enum Code: Int, Sendable, Equatable {
        /// An unknown error.
        case unknown = 0
        /// A peer is not connected to the session.
        case notConnected = 1
        /// An argument was invalid.
        case invalidParameter = 2
        /// The operation is not supported.
        case unsupported = 3
        /// A connection or invitation timed out.
        case timedOut = 4
        /// The operation was cancelled.
        case cancelled = 5
        /// Multipeer Connectivity is not available (on Linux: avahi-daemon is not running).
        case unavailable = 6
    }

    /// The `userInfo` key under which PeerMesh's own error code (e.g. `peerDisconnected`) travels.
    public static let peerMeshCodeKey = "PeerMeshErrorCode"

    /// The error's code.
    public let code: Code
    /// What happened and what to do, in words.
    public let message: String
    /// PeerMesh's code for the failure, when it came from PeerMesh.
    public let peerMeshCode: String?

    /// An error with `code` and a message.
    public init(_ code: Code, message: String = "", peerMeshCode: String? = nil) {
        self.code = code
        self.message = message.isEmpty ? "Multipeer Connectivity error \(code.rawValue)" : message
        self.peerMeshCode = peerMeshCode
    }

    /// MC's error domain.
    public static var errorDomain: String { MCErrorDomain }
    /// The code's raw value.
    public var errorCode: Int { code.rawValue }
    /// The message as `NSLocalizedDescriptionKey`, and PeerMesh's code.
    public var errorUserInfo: [String: Any] {
        var info: [String: Any] = [NSLocalizedDescriptionKey: message]
        if let peerMeshCode { info[Self.peerMeshCodeKey] = peerMeshCode }
        return info
    }
    /// The message.
    public var errorDescription: String? { message }

    /// `MCError.Code.unknown`, for `catch MCError.unknown` patterns.
    public static var unknown: Code { .unknown }
    /// `MCError.Code.notConnected`.
    public static var notConnected: Code { .notConnected }
    /// `MCError.Code.invalidParameter`.
    public static var invalidParameter: Code { .invalidParameter }
    /// `MCError.Code.unsupported`.
    public static var unsupported: Code { .unsupported }
    /// `MCError.Code.timedOut`.
    public static var timedOut: Code { .timedOut }
    /// `MCError.Code.cancelled`.
    public static var cancelled: Code { .cancelled }
    /// `MCError.Code.unavailable`.
    public static var unavailable: Code { .unavailable }
}

extension MCError.Code {
    /// Pattern-matches an error against a code, so `catch MCError.notConnected` works as with Apple's error structs.
    public static func ~= (code: MCError.Code, error: any Error) -> Bool {
        (error as? MCError)?.code == code
    }
}

extension MCError {
    /// The MC error that best names a PeerMesh failure; the message stays PeerMesh's.
    init(_ error: PeerMeshError) {
        let code: Code = switch error.code {
        case .notConnected, .peerDisconnected, .sessionClosed, .connectionClosed, .livenessTimeout: .notConnected
        case .invitationTimedOut, .invitationExpired: .timedOut
        case .cancelled, .invitationDeclined: .cancelled
        case .messageTooLarge, .contextTooLarge, .invalidServiceType, .invalidDiscoveryInfo, .discoveryInfoTooLarge,
             .reservedKey, .invalidDisplayName, .invalidConnectionData, .invalidConfiguration, .fileAccess: .invalidParameter
        case .daemonNotRunning, .discoveryDisconnected: .unavailable
        case .unsupportedVersion: .unsupported
        default: .unknown
        }
        self.init(code, message: error.message, peerMeshCode: error.code.name)
    }

    /// `peer` is not a member of the session the call was made on.
    static func notMember(_ peer: MCPeerID) -> MCError {
        MCError(.notConnected, message: "\(peer.displayName) is not connected to this session.", peerMeshCode: PeerMeshError.Code.notConnected.name)
    }

    /// `init(_:)` for an error whose type the compiler lost (a `catch` inside a task).
    init(from error: any Error) {
        if let error = error as? PeerMeshError {
            self.init(error)
        } else {
            self = error as? MCError ?? MCError(.unknown, message: "\(error)")
        }
    }
}
