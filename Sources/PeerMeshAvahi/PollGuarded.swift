/// Storage that is only touched while the owning client's poll lock is held (inside
/// `AvahiClient.withLock`). The lock lives in C, so the compiler cannot check this; keeping every access
/// inside `withLock` closures is the rule that makes it sound.
final class PollGuarded<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// A reference the client keeps to a publisher or browser without keeping it alive.
struct WeakDependent {
    weak var object: (any ClientDependent)?
}

/// A publisher or browser whose C objects belong to a client's C object.
protocol ClientDependent: AnyObject, Sendable {
    /// Called with the poll lock held, just before the C client is freed (which frees this object's C
    /// objects with it): forget them without freeing, and return their callback boxes, which the client
    /// releases once the C client is gone.
    func detachLocked(_ inner: inout AvahiClient.Inner) -> [UnsafeMutableRawPointer]
    /// Called with the poll lock held after the client's state changed: bring the C objects in line with
    /// what the user asked for and what the daemon allows now.
    func reconcileLocked(_ inner: inout AvahiClient.Inner)
    /// Called on the client's event pump, without the lock, for events of this object's C objects.
    func handle(_ event: PumpEvent)
}
