import Crypto
import NIOCore
import NIOSSL
import PeerMeshCore

/// The two TLS contexts a session needs (one per link role), built once from the identity.
///
/// TLS 1.3 only, mutual. Chain verification is replaced by a callback that accepts any certificate: identities are
/// self-signed, and what a peer is *allowed* to be is decided after TLS, by binding its Hello to the TLS key and
/// by the app's certificate handler.
struct TLSContexts: Sendable {
    let client: NIOSSLContext
    let server: NIOSSLContext

    init(identity: LocalIdentity) throws(PeerMeshError) {
        do {
            let certificate = try NIOSSLCertificate(bytes: identity.certificateDER, format: .der)
            let key = try NIOSSLPrivateKey(bytes: Array(identity.privateKey.pemRepresentation.utf8), format: .pem)
            var server = TLSConfiguration.makeServerConfiguration(certificateChain: [.certificate(certificate)], privateKey: .privateKey(key))
            var client = TLSConfiguration.makeClientConfiguration()
            client.certificateChain = [.certificate(certificate)]
            client.privateKey = .privateKey(key)
            server.minimumTLSVersion = .tlsv13
            server.maximumTLSVersion = .tlsv13
            server.certificateVerification = .noHostnameVerification
            // No trust store: the custom callback decides, so the system's CA certificates are never read. With the
            // default (`.default`), building the context loads them and fails where there are none (a minimal Debian
            // without ca-certificates, found by Scripts/test-package).
            server.trustRoots = .certificates([])
            client.trustRoots = .certificates([])
            client.minimumTLSVersion = .tlsv13
            client.maximumTLSVersion = .tlsv13
            client.certificateVerification = .noHostnameVerification
            // How long leaving waits for the peer's close_notify (`Session.disconnect` waits that long at most).
            server.shutdownTimeout = .seconds(2)
            client.shutdownTimeout = .seconds(2)
            self.server = try NIOSSLContext(configuration: server)
            self.client = try NIOSSLContext(configuration: client)
        } catch {
            throw PeerMeshError(.tlsHandshakeFailed, "Could not build the TLS configuration from the identity.", underlying: error)
        }
    }

    /// A TLS handler for `role`, accepting any certificate at the TLS layer (see the type's documentation).
    func handler(for role: LinkRole) throws -> NIOSSLHandler {
        let acceptAny: NIOSSLCustomVerificationCallback = { certificates, promise in
            promise.succeed(certificates.isEmpty ? .failed : .certificateVerified)
        }
        switch role {
        case .connector:
            return try NIOSSLClientHandler(context: client, serverHostname: nil, customVerificationCallback: acceptAny)
        case .acceptor:
            return NIOSSLServerHandler(context: server, customVerificationCallback: acceptAny)
        }
    }
}
