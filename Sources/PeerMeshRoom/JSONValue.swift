import FoundationEssentials

/// Any JSON value, read with `JSONDecoder` (FoundationEssentials has no `JSONSerialization`): how the control socket
/// and the web page's requests are read before their fields are checked one by one.
package enum JSONValue: Decodable, Equatable, Sendable {
    case null
    case bool(Bool)
    /// A number that is whole and fits in 64 bits.
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    package init(from decoder: any Decoder) throws {
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
        } else if let flag = try? single.decode(Bool.self) {
            self = .bool(flag)
        } else if let whole = try? single.decode(Int64.self) {
            self = .integer(whole)
        } else if let number = try? single.decode(Double.self) {
            self = .number(number)
        } else if let text = try? single.decode(String.self) {
            self = .string(text)
        } else if let list = try? single.decode([JSONValue].self) {
            self = .array(list)
        } else {
            self = .object(try single.decode([String: JSONValue].self))
        }
    }

    /// `data` as a JSON object, or nil when it is not one.
    package static func object(from data: Data) -> [String: JSONValue]? {
        guard case .object(let fields)? = try? JSONDecoder().decode(JSONValue.self, from: data) else { return nil }
        return fields
    }

    /// The text, when this is a string.
    package var string: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The whole number, when this is one.
    package var int: Int? {
        if case .integer(let whole) = self { return Int(exactly: whole) }
        return nil
    }

    /// The flag, when this is `true` or `false`.
    package var bool: Bool? {
        if case .bool(let flag) = self { return flag }
        return nil
    }
}
