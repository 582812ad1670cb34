import PeerMesh; import ArgumentParser; print("x")
