#include <algorithm>
#include <iostream>
#include <map>
#include <numeric>
#include <ranges>
#include <string>
#include <vector>

int main() {
    std::vector<std::string> words{"pear", "fig", "apple", "kiwi", "banana"};
    std::ranges::sort(words, {}, &std::string::size);

    std::map<std::size_t, std::vector<std::string>> by_length;
    for (const auto& w : words) by_length[w.size()].push_back(w);

    for (const auto& [len, group] : by_length) {
        std::cout << len << ":";
        for (const auto& w : group) std::cout << ' ' << w;
        std::cout << '\n';
    }

    auto evens = std::views::iota(1, 11) | std::views::filter([](int n) { return n % 2 == 0; })
                 | std::views::transform([](int n) { return n * n; });
    std::vector<int> v(evens.begin(), evens.end());
    std::cout << "sum of even squares: " << std::accumulate(v.begin(), v.end(), 0) << '\n';
}
