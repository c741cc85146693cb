"""stagevar's Python side: server lifecycle now, the bench runner later."""
