import Foundation

/// A JSON value, with booleans kept apart from numbers (`hash_verified` must be `true`, not 1).
enum JSONValue: Decodable {
    case null, bool(Bool), number(Double), string(String), array([JSONValue]), object([String: JSONValue])

    /// Decodes any JSON value, trying a boolean before a number.
    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let value = try? container.decode(Bool.self) { self = .bool(value) }
        else if let value = try? container.decode(Double.self) { self = .number(value) }
        else if let value = try? container.decode(String.self) { self = .string(value) }
        else if let value = try? container.decode([String: JSONValue].self) { self = .object(value) }
        else { self = .array(try container.decode([JSONValue].self)) }
    }

    /// The value at a dotted path of object keys (`end.sum_received.bits_per_second`).
    subscript(path: String) -> JSONValue? {
        var value: JSONValue? = self
        for key in path.split(separator: ".") {
            guard case .object(let members)? = value else { return nil }
            value = members[String(key)]
        }
        return value
    }

    /// A number, or a string that reads as one (the bash harness passed every value through text).
    var number: Double? {
        switch self {
        case .number(let value): value
        case .string(let text): Double(text)
        default: nil
        }
    }

    /// Parses one JSON text.
    static func parse(_ text: Substring) -> JSONValue? {
        try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    }

    /// The file's content when it is one JSON document, else its last line that starts with `{` and parses.
    static func lastObject(inFile path: String) -> JSONValue? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        let text = String(decoding: data, as: UTF8.self)
        if let whole = parse(text[...]) { return whole }
        var last: JSONValue?
        for line in text.split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("{"), let value = parse(trimmed[...]) { last = value }
        }
        return last
    }
}

/// A measurement's JSON line lacks a key (or its value is not a number).
struct MissingKey: Error, CustomStringConvertible {
    let file: String
    let key: String
    var description: String { "\(file): no number '\(key)' in its JSON line" }
}

/// One JSON output of a measured process: the file it came from and its last JSON object.
struct Measurement {
    let file: String
    let json: JSONValue?

    /// Reads the last JSON object of `file` (nil when there is none).
    init(file: String) {
        self.file = file
        json = JSONValue.lastObject(inFile: file)
    }

    /// True when every key holds a number.
    func has(_ keys: [String]) -> Bool { keys.allSatisfy { json?[$0]?.number != nil } }

    /// The number at `key`, or an error naming the file.
    func number(_ key: String) throws -> Double {
        guard let value = json?[key]?.number else { throw MissingKey(file: file, key: key) }
        return value
    }
}

/// The median of `key` over the measurements.
func medianOf(_ key: String, _ measurements: [Measurement]) throws -> Double {
    try median(measurements.map { try $0.number(key) })
}
