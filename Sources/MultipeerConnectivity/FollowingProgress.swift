import Foundation
import PeerMesh

extension Progress {
    /// A Foundation `Progress`, as MC apps take it, that follows PeerMesh's `ResourceProgress`: its counts are set
    /// whenever the transfer's change, and cancelling it cancels the transfer.
    static func following(_ resource: ResourceProgress) -> Progress {
        let progress = Progress(totalUnitCount: resource.totalUnitCount)
        progress.completedUnitCount = resource.completedUnitCount
        progress.cancellationHandler = { resource.cancel() }
        // Weak: the app holds the Progress for as long as it cares, and the Progress holds the transfer's (its
        // cancellation handler), so a strong reference back would keep both forever.
        let followed = UncheckedWeak(progress)
        resource.changeHandler = { resource in
            followed.object?.totalUnitCount = resource.totalUnitCount
            followed.object?.completedUnitCount = resource.completedUnitCount
        }
        // Counts set between the first read and the handler's start are caught by this second read.
        progress.totalUnitCount = resource.totalUnitCount
        progress.completedUnitCount = resource.completedUnitCount
        if resource.isCancelled { progress.cancel() }
        return progress
    }
}
