import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// What went wrong in words a person reads: the system's own sentence for a file-system error (`No such file or
/// directory`), else the error's description. FoundationEssentials has no `localizedDescription`, and its
/// `CocoaError` describes itself as a dump of its fields.
package func reasonText(_ error: any Error) -> String {
    if let posix = error as? POSIXError { return String(cString: strerror(posix.code.rawValue)) }
    if let cocoa = error as? CocoaError, let posix = cocoa.userInfo["NSUnderlyingError"] as? POSIXError {
        return String(cString: strerror(posix.code.rawValue))
    }
    return String(describing: error)
}
