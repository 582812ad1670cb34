@_exported import PeerMeshCore
