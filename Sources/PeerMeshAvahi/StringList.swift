import CAvahi

/// Conversions between Swift byte strings and `AvahiStringList` (TXT record data).
enum StringList {
    /// Builds a list in the given order; the caller frees it with `avahi_string_list_free`.
    /// Returns nil for an empty input (Avahi publishes an empty TXT record then) or on allocation failure.
    static func make(_ strings: [[UInt8]]) -> UnsafeMutablePointer<AvahiStringList>? {
        var list: UnsafeMutablePointer<AvahiStringList>? = nil
        // Adding prepends, so add in reverse to keep the wire order.
        for string in strings.reversed() {
            let next = string.withUnsafeBufferPointer { avahi_string_list_add_arbitrary(list, $0.baseAddress, $0.count) }
            guard let next else {
                avahi_string_list_free(list)
                return nil
            }
            list = next
        }
        return list
    }

    /// Copies a received list out into Swift arrays, in wire order. Avahi builds received lists by
    /// prepending, so the list runs backwards (checked against `avahi-browse -p`, which prints wire order).
    static func read(_ list: UnsafeMutablePointer<AvahiStringList>?) -> [[UInt8]] {
        var result: [[UInt8]] = []
        var node = list
        // A TXT record holds a few hundred strings at most; the bound guards against a corrupt list.
        while let current = node, result.count < 4096 {
            let size = avahi_string_list_get_size(current)
            if let text = avahi_string_list_get_text(current) {
                result.append(Array(UnsafeBufferPointer(start: text, count: size)))
            } else {
                result.append([])
            }
            node = avahi_string_list_get_next(current)
        }
        return result.reversed()
    }
}
