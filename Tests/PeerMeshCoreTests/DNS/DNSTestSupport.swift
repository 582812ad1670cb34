import PeerMeshCore
import Testing

/// Expects `body` to throw a `PeerMeshError` for which `check` holds (its code, what its message says).
func expectPeerMeshError<R>(_ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
                            of body: () throws -> R, where check: (PeerMeshError) -> Bool) {
    let error = #expect(throws: PeerMeshError.self, comment, sourceLocation: sourceLocation) { _ = try body() }
    if let error { #expect(check(error), comment, sourceLocation: sourceLocation) }
}
