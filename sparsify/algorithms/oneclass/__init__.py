"""The ν-one-class SVM and `SparseOneClassSVM`."""
