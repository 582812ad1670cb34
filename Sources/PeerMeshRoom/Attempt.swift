import PeerMesh

/// Runs a typed-throwing step and returns its outcome as a value.
package func attempt<T>(_ body: () async throws(PeerMeshError) -> T) async -> Result<T, PeerMeshError> {
    do { return .success(try await body()) } catch { return .failure(error) }
}
