"""The semi-supervised SVM with Lp-norm multiple kernel learning, and `SemiSupervisedSVC`."""
