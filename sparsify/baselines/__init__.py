"""The papers' baselines and relatives: reduced set (RS, MRS), RSVM and MRSVM, the relevance
vector machine, kernel matching reduction and the import vector machine."""
