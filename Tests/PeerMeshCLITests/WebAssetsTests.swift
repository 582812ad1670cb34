import Foundation
import Testing
@testable import PeerMeshRoom
@testable import peermesh

/// The page `peermesh web` serves: the embedded copy is the one in `Sources/peermesh/Web/Assets`, small, and keeps to
/// the rules its content security policy and R9 (peer text is data) set (docs/web-room.md).
@Suite("Web assets")
struct WebAssetsTests {
    static let assets = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/peermesh/Web/Assets")

    static func source(_ file: String) throws -> String {
        try String(contentsOf: assets.appendingPathComponent(file), encoding: .utf8)
    }

    @Test func embeddedCopyIsTheAssetsFolder() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.assets.path).filter { !$0.hasPrefix(".") }.sorted()
        #expect(files == WebAssets.all.map(\.file).sorted(), "run Scripts/embed-web-assets: the assets folder has other files")
        for asset in WebAssets.all {
            let onDisk = try Data(contentsOf: Self.assets.appendingPathComponent(asset.file))
            let same = Data(asset.body.utf8) == onDisk   // a Bool: a byte-by-byte diff of 40 KB says nothing more
            #expect(same, "run Scripts/embed-web-assets: \(asset.file) changed since it was embedded")
            #expect(asset.byteCount == onDisk.count, "run Scripts/embed-web-assets: \(asset.file)'s size is stale")
        }
        #expect(WebAssets.all.map(\.path) == ["/", "/room.js", "/room.css"])
        #expect(WebAssets.asset(at: "/room.js")?.contentType == "text/javascript; charset=utf-8")
        #expect(WebAssets.asset(at: "/")?.contentType == "text/html; charset=utf-8")
        #expect(WebAssets.asset(at: "/room.css")?.contentType == "text/css; charset=utf-8")
        #expect(WebAssets.asset(at: "/favicon.ico") == nil)
    }

    @Test func pageIsAtMost64KiB() {
        let total = WebAssets.all.reduce(0) { $0 + $1.body.utf8.count }
        #expect(total <= 65536, "the page is \(total) bytes; W1 allows 64 KiB")
        #expect(total == WebAssets.totalByteCount)
    }

    @Test func htmlHasNoInlineCodeStyleOrOutsideURL() throws {
        let html = try Self.source("index.html")
        let tags = html.matches(of: try Regex(#"<[A-Za-z][^>]*>"#)).map { String(html[$0.range]).lowercased() }
        let scripts = tags.filter { $0.hasPrefix("<script") }
        #expect(scripts == [#"<script type="module" src="/room.js">"#], "one module script, from the page's own origin")
        // No script body: what follows each <script ...> is its closing tag.
        #expect(html.matches(of: try Regex(#"<script[^>]*>\s*[^<\s]"#)).isEmpty, "inline script")
        for tag in tags {
            #expect(tag.firstMatch(of: try Regex(#"\sstyle\s*="#)) == nil, "style attribute in \(tag)")
            #expect(tag.firstMatch(of: try Regex(#"\son[a-z]+\s*="#)) == nil, "event handler attribute in \(tag)")
        }
        #expect(!html.lowercased().contains("<style"), "inline style sheet")
        let css = try Self.source("room.css"), js = try Self.source("room.js")
        for (name, text) in [("index.html", html), ("room.css", css), ("room.js", js)] {
            #expect(!text.contains("http://") && !text.contains("https://"), "\(name) names a URL outside the page")
        }
        #expect(!css.contains("@import") && !css.contains("url("), "room.css loads nothing")
        #expect(html.contains(#"<html lang="en">"#))
        #expect(html.contains(#"<meta name="viewport" content="width=device-width, initial-scale=1">"#))
        #expect(html.contains(#"<link rel="stylesheet" href="/room.css">"#))
    }

    /// R9: what peers write reaches the page as text only.
    @Test func scriptNeverParsesMarkupOrCode() throws {
        let js = try Self.source("room.js")
        for banned in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "new Function", "createContextualFragment",
                       "DOMParser", "setHTMLUnsafe", "srcdoc", "FileReader", "arrayBuffer("] {
            #expect(!js.contains(banned), "room.js uses \(banned)")
        }
        #expect(js.firstMatch(of: try Regex(#"\beval\b"#)) == nil, "room.js uses eval")
        // Timers take functions, never strings of code.
        #expect(js.firstMatch(of: try Regex(#"set(Timeout|Interval)\(\s*["'`]"#)) == nil, "a timer given code as text")
    }
}
