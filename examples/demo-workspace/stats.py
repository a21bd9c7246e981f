"""Another small module, so the demo has something to count."""

from statistics import mean


def summary(values: list[float]) -> dict[str, float]:
    return {"min": min(values), "max": max(values), "mean": mean(values)}


if __name__ == "__main__":
    print(summary([3.0, 1.0, 4.0, 1.0, 5.0]))
