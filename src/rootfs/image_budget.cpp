#include "rootfs/image_budget.hpp"

namespace gpuctk::rootfs {

namespace {

// k_image_work_limits is indexed by ImageWork.
constexpr bool rows_in_order() {
  for (size_t i = 0; i < std::size(k_image_work_limits); ++i) {
    if (static_cast<size_t>(k_image_work_limits[i].work) != i) {
      return false;
    }
  }
  return true;
}
static_assert(rows_in_order());

// "30 s", or "500 ms" for a deadline that is not whole seconds (as the sandbox names its own).
std::string describe(std::chrono::milliseconds deadline) {
  return deadline.count() % 1000 == 0 ? std::to_string(deadline.count() / 1000) + " s"
                                      : std::to_string(deadline.count()) + " ms";
}

}  // namespace

ImageBudget::ImageBudget(std::chrono::milliseconds deadline)
    : m_end(std::chrono::steady_clock::now() + deadline), m_deadline(deadline) {}

bool ImageBudget::spend(ImageWork work, size_t amount) {
  if (m_error) {
    return false;
  }
  const auto& row = k_image_work_limits[static_cast<size_t>(work)];
  size_t& spent = m_spent[static_cast<size_t>(work)];
  spent += amount;
  if (spent > row.limit) {
    m_error = "reading the image in-process: more than " + std::to_string(row.limit) + " " + row.noun;
  } else if (std::chrono::steady_clock::now() >= m_end) {
    m_error = "reading the image in-process: past its deadline of " + describe(m_deadline);
  }
  return !m_error;
}

Result<void> ImageBudget::check() const {
  if (m_error) {
    return fail(*m_error);
  }
  return {};
}

}  // namespace gpuctk::rootfs
