"""A model's first move on a tabular task: pandas in, scikit-learn pipeline,
cross-validation, a report with tabulate."""
import numpy as np
import pandas as pd
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from tabulate import tabulate

iris = load_iris(as_frame=True)
df = iris.frame
print(df.shape, list(df.columns[:2]))
print(df.groupby("target").size().to_dict())

X_train, X_test, y_train, y_test = train_test_split(
    df[iris.feature_names], df["target"], test_size=0.3, random_state=0, stratify=df["target"]
)
model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500))
model.fit(X_train, y_train)
print(f"test accuracy: {model.score(X_test, y_test):.3f}")
scores = cross_val_score(model, df[iris.feature_names], df["target"], cv=5)
print(f"5-fold mean: {np.mean(scores):.3f}")

means = df.groupby(df["target"].map(dict(enumerate(iris.target_names))))[iris.feature_names[:2]].mean().round(2)
print(tabulate(means, headers="keys", tablefmt="github"))
